import { setTimeout as sleep } from 'node:timers/promises'
import { connectDatabase } from '../../src/db/connect.js'
import { ALWAYS_VISIBLE_ITEM, generatedAppKey } from '../dataset.js'
import { type BenchEnvironment, warmCallers } from '../environment.js'
import {
  type EventStreamClients,
  openEventStreams,
  type StreamSpec,
} from '../event-stream-clients.js'
import type { NodeProcess } from '../node-process.js'
import {
  raiseFileLimit,
  readCpuSeconds,
  readFileLimit,
  readRssBytes,
} from '../process-resources.js'
import { type MetricSamples, readMetrics, sample } from '../read-metrics.js'
import { passOrMiss, type Scenario } from '../scenario.js'

/** One instance holds this many streams (EVENT_STREAMS_MAX's default). */
const STREAMS = 10_000
/**
 * A stream is a socket, its HTTP request and response and the body fastify
 * pipes from: Node's request and response objects and fastify's are some
 * 16 KB of it, which a stream holds for as long as it is open. 10,000 of
 * them must fit in 200 MB beside the snapshot.
 */
const MAX_BYTES_PER_STREAM = 20 * 1024
/** docs/api.md promises an event within a second of the commit, to every stream. */
const MAX_P99_MS = 1_000
/** Files besides the streams: database pools, the load generator's connections, probes. */
const SPARE_FILES = 1_000
/** Apps the streams are spread over; each caller has two streams (tabs) on each. */
const STREAM_APPS = 5
/** Odd callers' browsers ask for German, even ones send no header (the default, en). */
const BROWSER_HEADER = 'de-CH,de;q=0.9,en;q=0.8'
const GERMAN = { 'accept-language': BROWSER_HEADER }
const COMMITS = 20
/** Windows opened while the streams are open, each moving every stream's tag at its instant. */
const WINDOWS = 10
/** How far ahead of its commit each window opens: the commit's own event comes first. */
const WINDOW_LEAD_MS = 1_500
/** The service folds changes closer than 250 ms into one event; this keeps commits apart. */
const COMMIT_SPACING_MS = 1_000
const GIVE_UP_MS = 10_000
/** Time for the allocations of a burst of work to be done before memory is first read. */
const SETTLE_MS = 5_000
/**
 * When memory is read again, the reading that counts: V8's memory reducer
 * runs a full collection once allocation has stopped for a while (20 to 30 s
 * after opening 10,000 streams, here) and gives freed pages back; both
 * readings wait the same time, so neither counts the other's garbage.
 */
const SETTLED_MS = 60_000
const KB = 1024
const MB = 1024 * 1024

/**
 * Ten thousand open event streams on one instance, a service of their own on
 * the large data set: what a stream costs in memory, and how long a commit
 * takes to reach the last of them.
 */
export const streams: Scenario = {
  id: 'streams',
  run: async ({ env, log }) => {
    const needed = STREAMS + SPARE_FILES
    const limit = await raiseFileLimit(needed)
    if (limit.soft < needed) {
      return {
        rows: [{ scenario: `${STREAMS} event streams`, value: 'skipped' }],
        notes: [
          `skipped: the benchmark may open ${limit.soft} files (hard limit ${limit.hard}), the scenario needs ${needed}, and prlimit could not raise it (that takes CAP_SYS_RESOURCE); run \`ulimit -n 65536\` where allowed, then \`npm run bench\``,
        ],
      }
    }
    const service = await env.startService('service-streams', env.largeDatabaseUrl, {
      EVENT_STREAMS_MAX: String(STREAMS),
    })
    try {
      const appKeys = Array.from({ length: STREAM_APPS }, (_, index) =>
        generatedAppKey(Math.floor((index * env.dataset.apps) / STREAM_APPS)),
      )
      const specs = describeStreams(env.warmTokens, appKeys)
      const path = `/api/v1/shell/${env.hotApp}`
      await warmCallers(service.url, path, env.warmTokens)
      // Every variant the streams will be grouped by, so that the RSS they add is theirs alone.
      const [english, german] = [0, 1].map((parity) =>
        env.warmTokens.filter((_, caller) => caller % 2 === parity),
      ) as [string[], string[]]
      for (const appKey of appKeys) {
        await warmCallers(service.url, `/api/v1/shell/${appKey}`, english)
        await warmCallers(service.url, `/api/v1/shell/${appKey}`, german, GERMAN)
      }
      // Once open and closed before the reading without them, so that both readings follow the
      // same work (a full collection of V8's, Node's pools of parsers and the like at their size).
      const rehearsal = await openEventStreams(service.url, specs)
      rehearsal.close()
      await untilStreamsClosed(service)
      const without = await readSettledMemory(service)
      const openedAt = performance.now()
      const clients = await openEventStreams(service.url, specs)
      const openS = (performance.now() - openedAt) / 1000
      log(`${clients.count} streams open in ${openS.toFixed(1)} s`)
      const withStreams = await readSettledMemory(service)
      const reloadsBefore = await readMetrics(service.url)
      let latency: Awaited<ReturnType<typeof measureCommitToLastStream>>
      let windows: Awaited<ReturnType<typeof measureWindowToLastStream>>
      let reloads: string
      let events: { min: number; max: number }
      try {
        latency = await measureCommitToLastStream(env, service, clients, appKeys, log)
        reloads = describeReloads(reloadsBefore, await readMetrics(service.url))
        events = clients.eventRange()
        windows = await measureWindowToLastStream(env, clients, appKeys, log)
      } finally {
        clients.close()
      }
      await untilStreamsClosed(service)

      const bytesPerStream = (withStreams.rssBytes - without.rssBytes) / clients.count
      const perStream = (before: number, after: number) =>
        `${((after - before) / clients.count / KB).toFixed(2)} KB`
      const serviceLimit = await readFileLimit(service.pid)
      return {
        rows: [
          {
            scenario: `${STREAMS} event streams, RSS per stream`,
            value: `${(bytesPerStream / KB).toFixed(2)} KB`,
            target: `<= ${MAX_BYTES_PER_STREAM / KB} KB`,
            result: passOrMiss(bytesPerStream <= MAX_BYTES_PER_STREAM),
          },
          {
            scenario: `commit to the last of ${STREAMS} streams, ${COMMITS} commits`,
            p50Ms: latency.p50Ms,
            p99Ms: latency.p99Ms,
            value: `p99 ${latency.p99Ms.toFixed(0)} ms`,
            target: `p99 <= ${MAX_P99_MS} ms`,
            result: passOrMiss(latency.p99Ms <= MAX_P99_MS && latency.lost === 0),
          },
          {
            scenario: `a window's instant to the last of ${STREAMS} streams, ${WINDOWS} windows`,
            p50Ms: windows.p50Ms,
            p99Ms: windows.p99Ms,
            value: `p99 ${windows.p99Ms.toFixed(0)} ms`,
            target: `p99 <= ${MAX_P99_MS} ms`,
            result: passOrMiss(windows.p99Ms <= MAX_P99_MS && windows.lost === 0),
          },
        ],
        notes: [
          `open files allowed (soft/hard): benchmark ${limit.soft}/${limit.hard}, service ${serviceLimit.soft}/${serviceLimit.hard}`,
          `${clients.count} streams over ${STREAM_APPS} apps (${appKeys.join(', ')}), two per caller and app, ${env.warmTokens.length} callers, half with Accept-Language: ${BROWSER_HEADER} (de), half without (en); opened in ${openS.toFixed(1)} s`,
          `service RSS ${(without.rssBytes / MB).toFixed(0)} MB without the streams (their callers' variants rendered, the streams opened once and closed), ${(withStreams.rssBytes / MB).toFixed(0)} MB with them, each read ${SETTLED_MS / 1000} s after the work (V8's full collections in between: ${without.fullCollections} and ${withStreams.fullCollections}); of the difference, V8's heap: ${perStream(without.heapBytes, withStreams.heapBytes)} per stream`,
          `${SETTLE_MS / 1000} s after opening, before V8 collected the garbage of the requests that opened them: RSS ${perStream(without.rssBytes, withStreams.early.rssBytes)} per stream, V8's heap ${perStream(without.heapBytes, withStreams.early.heapBytes)} (against the same reading without)`,
          `each commit relabels ${ALWAYS_VISIBLE_ITEM} (no grant) of the ${STREAM_APPS} apps in en and de in one transaction: every stream gets an event; timed from COMMIT returning to the last socket's event, read by the benchmark; ${COMMITS} commits ${COMMIT_SPACING_MS / 1000} s apart, ${latency.lost} not seen within ${GIVE_UP_MS / 1000} s; the nearest-rank p99 of ${COMMITS} is the slowest; to the first stream's event: p50 ${latency.firstP50Ms.toFixed(0)} ms; ${reloads}; CPU per commit, to the last event: service ${latency.cpuMs.service.toFixed(0)} ms, benchmark ${latency.cpuMs.bench.toFixed(0)} ms (means)`,
          `shell events per stream: ${events.min} to ${events.max} (1 at open + 1 per commit = ${1 + COMMITS}); ${clients.failures()} socket errors or refusals`,
          'the commits also reload service-large, on the same database',
        ],
      }
    } finally {
      await service.stop()
    }
  },
}

/** Stream N: caller N mod callers, an app in turn per thousand, odd callers in German. */
function describeStreams(tokens: readonly string[], appKeys: readonly string[]): StreamSpec[] {
  return Array.from({ length: STREAMS }, (_, index) => {
    const caller = index % tokens.length
    const appKey = appKeys[Math.floor(index / tokens.length) % appKeys.length]
    return {
      path: `/api/v1/shell/${appKey}/events`,
      token: tokens[caller] as string,
      ...(caller % 2 === 1 ? { acceptLanguage: BROWSER_HEADER } : {}),
    }
  })
}

/**
 * A window's instant to the last stream's event: each round, one statement
 * gives the five apps' always-visible item a window that opens 1.5 s later,
 * which hides it at once (every stream gets that event first), and then
 * shows it at its instant, with no database change: the feed's timer makes
 * the snapshot again and every stream's tag moves.
 */
async function measureWindowToLastStream(
  env: BenchEnvironment,
  clients: EventStreamClients,
  appKeys: readonly string[],
  log: (line: string) => void,
) {
  const sql = connectDatabase(env.largeDatabaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  const samplesMs: number[] = []
  try {
    for (let round = 1; round <= WINDOWS; round += 1) {
      const hidden = clients.untilNextEvent(GIVE_UP_MS)
      const [opening] = await sql<{ at: number }[]>`
        update shell.menu_items
        set visible_from = now() + ${WINDOW_LEAD_MS} * interval '1 millisecond'
        where app_key = any(${[...appKeys]}) and item_key = ${ALWAYS_VISIBLE_ITEM}
        returning (extract(epoch from visible_from) * 1000)::float8 as at`
      await hidden
      // Armed before the instant, so an event that comes then is not missed.
      const shown = await clients.untilNextEvent(GIVE_UP_MS).catch(() => null)
      // performance.now() to the epoch, read now: the instant is the database's clock's.
      const epochOfPerformanceZero = Date.now() - performance.now()
      if (shown !== null && opening !== undefined) {
        samplesMs.push(epochOfPerformanceZero + shown.lastAtMs - opening.at)
      }
      await sleep(COMMIT_SPACING_MS)
    }
  } finally {
    await sql`
      update shell.menu_items set visible_from = null
      where app_key = any(${[...appKeys]}) and item_key = ${ALWAYS_VISIBLE_ITEM}`
    await sql.end()
  }
  log(`window to last stream, ms: ${samplesMs.map((ms) => ms.toFixed(0)).join(' ')}`)
  const percentile = (p: number) =>
    samplesMs.sort((a, b) => a - b)[Math.ceil(p * samplesMs.length) - 1] ?? Number.NaN
  return { p50Ms: percentile(0.5), p99Ms: percentile(0.99), lost: WINDOWS - samplesMs.length }
}

/**
 * Commit to the last stream's event, and the CPU time the service and the
 * benchmark spent from before the commit to then: whether the time went to
 * work or to waiting for a core.
 */
async function measureCommitToLastStream(
  env: BenchEnvironment,
  service: NodeProcess,
  clients: EventStreamClients,
  appKeys: readonly string[],
  log: (line: string) => void,
) {
  const sql = connectDatabase(env.largeDatabaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  const samplesMs: number[] = []
  const firstMs: number[] = []
  const cpuMs = { service: 0, bench: 0 }
  try {
    for (let commit = 1; commit <= COMMITS; commit += 1) {
      // Armed before the commit, so an event that comes quickly is not missed; null when lost.
      const lastEvent = clients.untilNextEvent(GIVE_UP_MS).catch(() => null)
      const [serviceCpuS, benchCpu] = [await readCpuSeconds(service.pid), process.cpuUsage()]
      await sql.begin(async (tx) => {
        await tx`
          update shell.menu_items set label = ${`Home ${commit}`}
          where app_key = any(${[...appKeys]}) and item_key = ${ALWAYS_VISIBLE_ITEM}`
        await tx`
          update shell.menu_item_labels l set label = ${`Startseite ${commit}`}
          from shell.menu_items m
          where m.id = l.menu_item_id and l.locale = 'de'
            and m.app_key = any(${[...appKeys]}) and m.item_key = ${ALWAYS_VISIBLE_ITEM}`
      })
      const committedAt = performance.now()
      const arrived = await lastEvent
      const { user, system } = process.cpuUsage(benchCpu)
      cpuMs.bench += (user + system) / 1000 / COMMITS
      cpuMs.service += (1000 * ((await readCpuSeconds(service.pid)) - serviceCpuS)) / COMMITS
      if (arrived !== null) {
        samplesMs.push(arrived.lastAtMs - committedAt)
        firstMs.push(arrived.firstAtMs - committedAt)
      }
      await sleep(COMMIT_SPACING_MS)
    }
  } finally {
    await sql.end()
  }
  log(`commit to last stream, ms: ${samplesMs.map((ms) => ms.toFixed(0)).join(' ')}`)
  const percentile = (values: number[], p: number) =>
    values.sort((a, b) => a - b)[Math.ceil(p * values.length) - 1] ?? Number.NaN
  return {
    p50Ms: percentile(samplesMs, 0.5),
    p99Ms: percentile(samplesMs, 0.99),
    firstP50Ms: percentile(firstMs, 0.5),
    cpuMs,
    lost: COMMITS - samplesMs.length,
  }
}

interface MemoryReading {
  readonly rssBytes: number
  readonly heapBytes: number
}

interface SettledMemory extends MemoryReading {
  /** Read SETTLE_MS after the work, its garbage not yet collected included. */
  readonly early: MemoryReading
  /** V8's full collections between the two readings. */
  readonly fullCollections: number
}

/**
 * RSS and V8's heap in use SETTLED_MS after the last work, and SETTLE_MS
 * after it for comparison. The service cannot be told to collect garbage
 * (that takes --expose-gc): read early, the garbage of the work (the
 * requests that opened the streams, for one) counts as memory held.
 */
async function readSettledMemory(service: NodeProcess): Promise<SettledMemory> {
  const startedAt = performance.now()
  await sleep(SETTLE_MS)
  const early = await readMemory(service)
  await sleep(Math.max(0, SETTLED_MS - (performance.now() - startedAt)))
  const settled = await readMemory(service)
  return {
    rssBytes: settled.rssBytes,
    heapBytes: settled.heapBytes,
    early,
    fullCollections: settled.fullCollections - early.fullCollections,
  }
}

async function readMemory(
  service: NodeProcess,
): Promise<MemoryReading & { fullCollections: number }> {
  const metrics = await readMetrics(service.url)
  return {
    rssBytes: await readRssBytes(service.pid),
    heapBytes: sample(metrics, 'nodejs_heap_size_used_bytes'),
    // No sample yet: no full collection yet.
    fullCollections: sample(metrics, 'nodejs_gc_duration_seconds_count', 'kind="major"') || 0,
  }
}

/** The service's reloads between two reads of its metrics: how many, and their mean read-and-build time. */
function describeReloads(before: MetricSamples, after: MetricSamples): string {
  const delta = (name: string) => sample(after, name) - sample(before, name)
  const count = delta('shell_snapshot_reload_duration_seconds_count')
  const meanMs = (1000 * delta('shell_snapshot_reload_duration_seconds_sum')) / count
  return `the service reloaded ${count} times, ${meanMs.toFixed(0)} ms each (mean, read and build)`
}

/** The service has let go of every stream, so the next leg does not pay for closing them. */
async function untilStreamsClosed(service: NodeProcess): Promise<void> {
  const deadline = Date.now() + GIVE_UP_MS
  while ((await readMetrics(service.url).then((m) => sample(m, 'shell_event_streams'))) > 0) {
    if (Date.now() > deadline) throw new Error('the service still counts open streams')
    await sleep(100)
  }
}
