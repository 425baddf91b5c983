import { SEED_APP, warmCallers } from '../environment.js'
import type { Scenario } from '../scenario.js'

/** Issue 6: serving one app must not slow down with the number of apps in the snapshot. */
const MIN_RATIO = 0.95

/**
 * Two services of the same build, one on 1,001 apps, one on the seed app
 * alone, asked for the same app by the same callers: bodies, tags and
 * variants are identical, only the size of the snapshot differs.
 */
export const oneApp: Scenario = {
  id: 'one-app',
  run: async ({ env, compare }) => {
    const [path, tokens] = [`/api/v1/shell/${SEED_APP}`, env.warmPool]
    await warmCallers(env.large.url, path, env.warmTokens)
    await warmCallers(env.small.url, path, env.warmTokens)
    const count = env.dataset.apps + 1
    return compare(
      { label: `shell ${SEED_APP}, one app of ${count}`, server: env.large, path, tokens },
      { label: `shell ${SEED_APP}, one app of 1`, server: env.small, path, tokens },
      MIN_RATIO,
    )
  },
}
