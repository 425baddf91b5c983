import { warmCallers } from '../environment.js'
import type { ProbeResponse } from '../http-probe.js'
import type { Scenario } from '../scenario.js'

/** Issue 13: a browser's Accept-Language costs the warm shell at most 2% of its throughput. */
const MIN_RATIO = 0.98
/** What a Swiss German browser sends; its `de-CH` finds the apps' `de` by RFC 4647 lookup. */
const BROWSER_HEADER = 'de-CH,de;q=0.9,en;q=0.8'

/**
 * The same service, app and warm callers with and without a browser's
 * Accept-Language: what negotiation costs per request once the header's
 * locale is remembered and the `de` variants are rendered. The two sides
 * send different bodies (German labels against English ones); their sizes
 * are in the notes.
 */
export const languages: Scenario = {
  id: 'languages',
  run: async ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    const [tokens, header] = [env.warmPool, { 'accept-language': BROWSER_HEADER }]
    const german = await warmCallers(env.large.url, path, env.warmTokens, header)
    const english = await warmCallers(env.large.url, path, env.warmTokens)
    const chosen = new Set(german.map((response) => response.headers['content-language']))
    if (chosen.size !== 1 || !chosen.has('de')) {
      throw new Error(`languages: ${BROWSER_HEADER} chose ${[...chosen].join(', ')}, not de`)
    }
    const meanBytes = (responses: readonly ProbeResponse[]) =>
      Math.round(responses.reduce((sum, { body }) => sum + body.length, 0) / responses.length)
    const comparison = await compare(
      {
        label: `shell 200, Accept-Language: ${BROWSER_HEADER}`,
        server: env.large,
        path,
        tokens,
        headers: header,
      },
      { label: 'shell 200, no Accept-Language', server: env.large, path, tokens },
      MIN_RATIO,
    )
    return {
      rows: comparison.rows,
      notes: [
        ...comparison.notes,
        `mean body over the callers: ${meanBytes(german)} B in de, ${meanBytes(english)} B in en`,
      ],
    }
  },
}
