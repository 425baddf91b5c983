import type { Scenario } from '../scenario.js'

/** Issue 16: the service's own work (token cache, role-set variant, headers) costs at most a tenth. */
const MIN_RATIO = 0.9

/** The warm shell against a bare route that sends the same bytes and headers. */
export const shell200: Scenario = {
  id: 'shell-200',
  run: ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    const tokens = env.warmPool
    const bare = `bare route, the same ${env.recorded.shellBytes} B`
    return compare(
      { label: `shell 200, ${tokens.size} warm callers`, server: env.large, path, tokens },
      { label: bare, server: env.baseline, path, tokens },
      MIN_RATIO,
    )
  },
}
