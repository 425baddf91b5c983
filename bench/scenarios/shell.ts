import { readFile } from 'node:fs/promises'
import { createHttpProbe } from '../http-probe.js'
import type { Scenario } from '../scenario.js'

/**
 * The service's own work on a warm request (the token cache, the caller's
 * last shell, the headers) may cost at most 30 % of a bare route that sends
 * the same bytes: what a caller of a cached token pays for authentication
 * and the precomputed body, against fastify doing nothing else.
 */
const MIN_WARM_RATIO = 0.7
/** A 304 sends no body, so it should be at least as fast as the bare route's 200. */
const MIN_NOT_MODIFIED_RATIO = 1

/**
 * The seed app, asked for by 1,000 warm callers cycling through every subset
 * of its roles, from service-small (the seed app and crm-audiences), against
 * bench/baseline-server.mjs replaying the median caller's response; then
 * each caller's If-None-Match against the bare route's 200 on the same
 * requests. Then, shown, the warm 200 from the service that holds thousands
 * of apps more: the same work, with a heap the collector must walk.
 */
export const shell: Scenario = {
  id: 'shell',
  run: async ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    const warm = await compare(
      {
        label: `shell 200, ${env.hotApp}, ${env.warmPool.size} warm callers`,
        server: env.small,
        path,
        tokens: env.warmPool,
      },
      {
        label: `bare route, the same ${env.recorded.shellBytes} B`,
        server: env.baseline,
        path,
        tokens: env.warmPool,
      },
      MIN_WARM_RATIO,
    )
    // wrk counts statuses of 400 and more only: tags that stopped matching would go unseen.
    const [firstLine = ''] = (await readFile(env.conditionalPool.path, 'utf8')).split('\n')
    const [token, etag = ''] = firstLine.split(' ')
    const probe = createHttpProbe(env.small.url)
    const { status } = await probe.get(path, {
      authorization: `Bearer ${token}`,
      'if-none-match': etag,
    })
    probe.close()
    if (status !== 304) throw new Error(`shell: the caller's own ETag got ${status}, not 304`)
    const notModified = await compare(
      { label: 'shell 304, If-None-Match', server: env.small, path, tokens: env.conditionalPool },
      { label: 'bare route 200', server: env.baseline, path, tokens: env.conditionalPool },
      MIN_NOT_MODIFIED_RATIO,
    )
    const large = await compare(
      {
        label: `shell 200, the same, the service holding ${env.dataset.apps + 1} apps`,
        server: env.large,
        path,
        tokens: env.warmPool,
      },
      { label: 'bare route', server: env.baseline, path, tokens: env.warmPool },
      null,
    )
    return {
      rows: [...warm.rows, ...notModified.rows, ...large.rows],
      notes: [
        `200: ${warm.notes.join('; ')}`,
        `304: ${notModified.notes.join('; ')}`,
        `${env.dataset.apps + 1} apps: ${large.notes.join('; ')}`,
      ],
    }
  },
}
