import { readMetrics, sample } from '../read-metrics.js'
import type { Scenario } from '../scenario.js'

/** Cache hits above this share would flatter the service: the run says so. */
const MAX_HIT_SHARE = 0.01

/**
 * Every request a token the service has not cached: the pool is larger than
 * TOKEN_CACHE_MAX, so a token that comes round again has been evicted (the
 * cache counters show it). Against a bare route that runs only jose's
 * jwtVerify on the same tokens with the same key set. Shown, with no
 * target: a new token costs an RSA verification, which no code of ours
 * changes.
 */
export const newToken: Scenario = {
  id: 'new-token',
  run: async ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    const tokens = await env.newTokenPool()
    const countLookups = async () => {
      const metrics = await readMetrics(env.small.url)
      return (result: string) => sample(metrics, 'shell_token_cache_total', `result="${result}"`)
    }
    const before = await countLookups()
    const comparison = await compare(
      { label: 'shell 200, a new token every request', server: env.small, path, tokens },
      {
        label: 'bare route, jose jwtVerify only',
        server: env.baseline,
        path: `/verify-only/${env.hotApp}`,
        tokens: await env.newTokenPool(),
      },
      null,
    )
    const after = await countLookups()
    const misses = after('miss') - before('miss')
    const hits = after('hit') - before('hit')
    const tooManyHits = hits > MAX_HIT_SHARE * (hits + misses)
    return {
      rows: comparison.rows,
      notes: [
        ...comparison.notes,
        `token cache during the service's legs: ${misses} misses, ${hits} hits, from a pool of ${tokens.size} tokens${tooManyHits ? '; too many hits: the ratio flatters the service' : ''}`,
      ],
    }
  },
}
