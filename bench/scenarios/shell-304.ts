import { readFile } from 'node:fs/promises'
import { createHttpProbe } from '../http-probe.js'
import type { Scenario } from '../scenario.js'

/** Issue 16: a 304 sends no body, so it should be at least as fast as the bare route's 200. */
const MIN_RATIO = 1

/** Each caller's If-None-Match against the bare route's 200 on the same requests. */
export const shell304: Scenario = {
  id: 'shell-304',
  run: async ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    // wrk counts statuses of 400 and more only: tags that stopped matching would go unseen.
    const [firstLine = ''] = (await readFile(env.conditionalPool.path, 'utf8')).split('\n')
    const [token, etag = ''] = firstLine.split(' ')
    const probe = createHttpProbe(env.large.url)
    const { status } = await probe.get(path, {
      authorization: `Bearer ${token}`,
      'if-none-match': etag,
    })
    probe.close()
    if (status !== 304) throw new Error(`shell-304: the caller's own ETag got ${status}, not 304`)
    return compare(
      { label: 'shell 304, If-None-Match', server: env.large, path, tokens: env.conditionalPool },
      { label: 'bare route 200', server: env.baseline, path, tokens: env.conditionalPool },
      MIN_RATIO,
    )
  },
}
