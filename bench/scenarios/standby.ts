import { setTimeout as sleep } from 'node:timers/promises'
import { connectDatabase } from '../../src/db/connect.js'
import { startStreamingReplica } from '../../test/helpers/streaming-replica.js'
import { createSeededDatabase } from '../dataset.js'
import { SEED_APP, warmCallers } from '../environment.js'
import { createHttpProbe } from '../http-probe.js'
import type { NodeProcess } from '../node-process.js'
import { readMetrics, sample } from '../read-metrics.js'
import { passOrMiss, type Scenario } from '../scenario.js'

/**
 * The standby's known lag (recovery_min_apply_delay): what a replica in
 * another zone under a burst of writes may show. Long against the check's
 * second, so that what the wait buys is plain.
 */
const APPLY_DELAY_MS = 1_500
/** Commits timed, each after a pause drawn between 0 and 1 s, so the check is met at every phase. */
const COMMITS = 20
const MAX_PAUSE_MS = 1_000
/**
 * CONTRACT 4: a change reaches the instance within the standby's replay lag
 * plus the usual 100 ms; the wait's polls are 100 ms apart at most.
 */
const MAX_P99_PAST_LAG_MS = 250
/** The poll's own pause: milliseconds against a lag of seconds, and two cores left to the servers. */
const POLL_PAUSE_MS = 5
const GIVE_UP_MS = 15_000
const DATABASE = 'bench_standby'

/**
 * A primary and a streaming replica of the scenario's own, the replica
 * applying each commit 1.5 s after the primary made it. Two services read the
 * replica: one with FEED_DATABASE_URL on the primary, whose notified reloads
 * wait for the standby to replay the commit; one without, which cannot
 * LISTEN on the standby and follows it by the check every second alone.
 * Each commit relabels an item of the seed app, and both are polled until
 * they serve the new ETag.
 */
export const standby: Scenario = {
  id: 'standby',
  run: async ({ env, log }) => {
    const replica = await startStreamingReplica({ applyDelayMs: APPLY_DELAY_MS })
    const services: NodeProcess[] = []
    try {
      const primaryUrl = replica.primary.urlFor(DATABASE)
      const standbyUrl = replica.standby.urlFor(DATABASE)
      await createSeededDatabase(replica.primary.adminUrl, primaryUrl, DATABASE)
      await replica.caughtUp()
      const waiting = await env.startService('service-standby-wait', standbyUrl, {
        FEED_DATABASE_URL: primaryUrl,
      })
      const checking = await env.startService('service-standby-check', standbyUrl)
      services.push(waiting, checking)
      const path = `/api/v1/shell/${SEED_APP}`
      const tokens = env.warmTokens.slice(0, 1)
      for (const service of services) await warmCallers(service.url, path, tokens)

      const timings = await commitAndTime(primaryUrl, services, path, tokens[0] ?? '', log)
      const [withWait, checkAlone] = timings.map(summarise) as [Summary, Summary]
      const metrics = await readMetrics(waiting.url)
      const waits = sample(metrics, 'shell_feed_replay_wait_seconds_count')
      const waitedMs = (1000 * sample(metrics, 'shell_feed_replay_wait_seconds_sum')) / waits
      const maxP99Ms = APPLY_DELAY_MS + MAX_P99_PAST_LAG_MS
      const title = `commit to served ETag, a standby ${APPLY_DELAY_MS / 1000} s behind, ${COMMITS} commits`
      return {
        rows: [
          {
            scenario: `${title}, FEED_DATABASE_URL on the primary (the wait)`,
            p50Ms: withWait.p50Ms,
            p99Ms: withWait.p99Ms,
            value: `p99 ${withWait.p99Ms.toFixed(0)} ms`,
            target: `p99 <= ${maxP99Ms} ms`,
            result: passOrMiss(withWait.p99Ms <= maxP99Ms && withWait.lost === 0),
          },
          {
            scenario: '  the same, no FEED_DATABASE_URL (the check every second alone)',
            p50Ms: checkAlone.p50Ms,
            p99Ms: checkAlone.p99Ms,
            value: `+${(checkAlone.p50Ms - withWait.p50Ms).toFixed(0)} ms at p50, +${(checkAlone.p99Ms - withWait.p99Ms).toFixed(0)} at p99`,
          },
        ],
        notes: [
          `from COMMIT returning on the primary to each service serving the new ETag, polled on a kept-alive connection with If-None-Match every ${POLL_PAUSE_MS} ms; commits ${MAX_PAUSE_MS / 1000} s apart at most, at random; not seen within ${GIVE_UP_MS / 1000} s: ${withWait.lost} with the wait, ${checkAlone.lost} with the check alone`,
          `the wait: shell_feed_replay_wait_seconds observed ${waits} waits (the first load's among them), ${waitedMs.toFixed(0)} ms each on average; the standby applies each commit ${APPLY_DELAY_MS} ms after the primary made it (recovery_min_apply_delay)`,
        ],
      }
    } finally {
      for (const service of services) await service.stop()
      await replica.remove()
    }
  },
}

interface Summary {
  readonly p50Ms: number
  readonly p99Ms: number
  readonly lost: number
}

/** Nearest rank: of 20 commits the p99 is the slowest. */
function summarise(samplesMs: readonly number[]): Summary {
  const seen = samplesMs.filter((ms) => Number.isFinite(ms)).sort((a, b) => a - b)
  const percentile = (p: number) => seen[Math.ceil(p * seen.length) - 1] ?? Number.NaN
  return {
    p50Ms: percentile(0.5),
    p99Ms: percentile(0.99),
    lost: samplesMs.length - seen.length,
  }
}

/** Per service, the time from each COMMIT returning to its new ETag. */
async function commitAndTime(
  primaryUrl: string,
  services: readonly NodeProcess[],
  path: string,
  token: string,
  log: (line: string) => void,
): Promise<number[][]> {
  const authorization = `Bearer ${token}`
  const probes = services.map((service) => createHttpProbe(service.url))
  const sql = connectDatabase(primaryUrl, { max: 1, applicationName: 'shell-data-bench' })
  const timings: number[][] = services.map(() => [])
  try {
    for (let commit = 1; commit <= COMMITS; commit += 1) {
      await sleep(Math.random() * MAX_PAUSE_MS)
      const before = await Promise.all(
        probes.map(async (probe) => `${(await probe.get(path, { authorization })).headers.etag}`),
      )
      await sql`
        update shell.menu_items set label = ${`Dashboard ${commit}`}
        where app_key = ${SEED_APP} and item_key = 'dashboard'`
      const committedAt = performance.now()
      const servedMs = await Promise.all(
        probes.map(async (probe, index) => {
          for (;;) {
            const headers = { authorization, 'if-none-match': before[index] ?? '' }
            const response = await probe.get(path, headers)
            const elapsedMs = performance.now() - committedAt
            if (response.status === 200) return elapsedMs
            if (elapsedMs > GIVE_UP_MS) return Number.POSITIVE_INFINITY
            await sleep(POLL_PAUSE_MS)
          }
        }),
      )
      for (const [index, ms] of servedMs.entries()) timings[index]?.push(ms)
      log(`commit ${commit}: served after ${servedMs.map((ms) => ms.toFixed(0)).join(', ')} ms`)
    }
  } finally {
    for (const probe of probes) probe.close()
    await sql.end()
  }
  return timings
}
