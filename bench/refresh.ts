import { connectDatabase } from '../src/db/connect.js'
import { ALWAYS_VISIBLE_ITEM } from './dataset.js'
import { createHttpProbe } from './http-probe.js'
import { LatencyHistogram, type LatencySummary } from './latency-histogram.js'

/** A commit whose change has not shown after this long counts as lost. */
const GIVE_UP_MS = 10_000

export interface RefreshResult {
  readonly commits: number
  /** Commits whose change was not seen within 10 s. */
  readonly lost: number
  readonly latency: LatencySummary
  /** Every measured latency, in commit order (ms). */
  readonly samplesMs: readonly number[]
}

/**
 * Commits `commits` changes one after the other, each an autocommitted
 * UPDATE of a label every caller sees, and polls the shell endpoint over one
 * kept-alive connection (If-None-Match with the tag in hand, so unchanged
 * answers are 304s) until the caller's ETag changes. Latency runs from the
 * moment the UPDATE is sent, so it includes the commit itself, the NOTIFY,
 * the service's coalescing wait, the database read, the snapshot build, the
 * swap and the request that sees it.
 */
export async function measureRefresh(options: {
  serviceUrl: string
  databaseUrl: string
  appKey: string
  token: string
  commits: number
  /** Makes labels unique across measurements, so every commit changes the content. */
  runLabel: string
}): Promise<RefreshResult> {
  const sql = connectDatabase(options.databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  const probe = createHttpProbe(options.serviceUrl)
  const path = `/api/v1/shell/${options.appKey}`
  const authorization = `Bearer ${options.token}`
  const samplesMs: number[] = []
  let lost = 0
  try {
    let etag = (await probe.get(path, { authorization })).headers.etag ?? ''
    for (let commit = 0; commit < options.commits; commit += 1) {
      const label = `Home ${options.runLabel}-${commit}`
      const sentAt = performance.now()
      await sql`
        update shell.menu_items set label = ${label}
        where app_key = ${options.appKey} and item_key = ${ALWAYS_VISIBLE_ITEM}`
      for (;;) {
        const response = await probe.get(path, { authorization, 'if-none-match': etag })
        const elapsedMs = performance.now() - sentAt
        if (response.status === 200 && response.headers.etag !== etag) {
          samplesMs.push(elapsedMs)
          etag = response.headers.etag ?? ''
          break
        }
        if (response.status !== 304 && response.status !== 200) {
          throw new Error(
            `refresh poll: ${response.status} ${response.body.toString().slice(0, 200)}`,
          )
        }
        if (elapsedMs > GIVE_UP_MS) {
          lost += 1
          break
        }
      }
    }
  } finally {
    probe.close()
    await sql.end()
  }
  const histogram = new LatencyHistogram()
  for (const sampleMs of samplesMs) histogram.record(sampleMs)
  return {
    commits: options.commits,
    lost,
    latency: histogram.summary(),
    samplesMs: samplesMs.map((ms) => Math.round(ms * 100) / 100),
  }
}
