import { AUDIENCES_APP } from '../dataset.js'
import { SEED_APP, warmCallers } from '../environment.js'
import type { Scenario } from '../scenario.js'

/**
 * What a caller is in is worked out once per token and kept with its last
 * shell, and bodies stay precomputed per audience: an app with rollouts and
 * windows serves as fast as the same app without them, warm or on a new
 * token, within 5 %.
 */
const MIN_RATIO = 0.95

/**
 * The seed app with five items rolled out and two in windows
 * (bench/dataset.ts) against the seed app itself, on the same service, by
 * the same callers: warm, then a new token every request.
 */
export const audiences: Scenario = {
  id: 'audiences',
  run: async ({ env, compare }) => {
    const withAudiences = `/api/v1/shell/${AUDIENCES_APP}`
    const without = `/api/v1/shell/${SEED_APP}`
    await warmCallers(env.small.url, withAudiences, env.warmTokens)
    await warmCallers(env.small.url, without, env.warmTokens)
    const warm = await compare(
      {
        label: `shell 200, ${AUDIENCES_APP}: 5 rollouts, 2 windows`,
        server: env.small,
        path: withAudiences,
        tokens: env.warmPool,
      },
      {
        label: `shell 200, ${SEED_APP}: none`,
        server: env.small,
        path: without,
        tokens: env.warmPool,
      },
      MIN_RATIO,
    )
    const fresh = await compare(
      {
        label: `shell 200, ${AUDIENCES_APP}, a new token every request`,
        server: env.small,
        path: withAudiences,
        tokens: await env.newTokenPool(),
      },
      {
        label: `shell 200, ${SEED_APP}, a new token every request`,
        server: env.small,
        path: without,
        tokens: await env.newTokenPool(),
      },
      MIN_RATIO,
    )
    return {
      rows: [...warm.rows, ...fresh.rows],
      notes: [`warm: ${warm.notes.join('; ')}`, `new tokens: ${fresh.notes.join('; ')}`],
    }
  },
}
