import type { Scenario } from '../scenario.js'

/** The inventory of every app against the same bytes from the bare route; shown, no target. */
export const apps: Scenario = {
  id: 'apps',
  run: ({ env, compare }) => {
    const path = '/api/v1/apps'
    const tokens = env.warmPool
    const bare = `bare route, the same ${env.recorded.appsBytes} B`
    return compare(
      { label: `apps inventory, ${env.dataset.apps + 1} apps`, server: env.large, path, tokens },
      { label: bare, server: env.baseline, path, tokens },
      null,
    )
  },
}
