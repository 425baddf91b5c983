import { readFile } from 'node:fs/promises'
import { type BenchEnvironment, requestForEachToken, timestampForFile } from './environment.js'
import { readMetrics, sample } from './metrics-reader.js'
import { type ScenarioOutcome, TARGETS } from './outcome.js'
import { measureRefresh, type RefreshResult } from './refresh.js'
import type { BenchSettings } from './settings.js'
import { measureSnapshotBuild, type SnapshotBuildCost } from './snapshot-cost.js'

const MB = 1024 * 1024

/** COMMIT to a changed ETag: idle, then under the shell-200 load. */
export async function runRefreshScenario(
  env: BenchEnvironment,
  settings: BenchSettings,
  log: (line: string) => void,
): Promise<ScenarioOutcome> {
  const shellPath = `/api/v1/shell/${env.hotApp}`
  const token = env.warmTokens[0] ?? ''
  const runLabel = timestampForFile()
  const common = {
    serviceUrl: env.large.url,
    databaseUrl: env.largeDatabaseUrl,
    appKey: env.hotApp,
    token,
    commits: settings.refreshCommits,
  }
  const before = await readMetrics(env.large.url)
  const idle = await measureRefresh({ ...common, runLabel: `${runLabel}-idle` })
  log(
    `refresh idle: p50 ${idle.latency.p50Ms} ms, p99 ${idle.latency.p99Ms} ms, max ${idle.latency.maxMs} ms, lost ${idle.lost}`,
  )
  const between = await readMetrics(env.large.url)
  await requestForEachToken(env.probes.large, shellPath, env.warmTokens)
  const loadRun = env.load.run({
    url: `${env.large.url}${shellPath}`,
    connections: settings.connections,
    warmupS: 0,
    durationS: 3_600,
    tokenSet: 'warm',
  })
  await new Promise((resolve) => setTimeout(resolve, settings.warmupS * 1000))
  let loaded: RefreshResult
  try {
    loaded = await measureRefresh({ ...common, runLabel: `${runLabel}-load` })
  } finally {
    await env.load.stop()
  }
  const load = await loadRun
  const after = await readMetrics(env.large.url)
  log(
    `refresh under load (${Math.round(load.requestsPerSecond)} req/s): p50 ${loaded.latency.p50Ms} ms, p99 ${loaded.latency.p99Ms} ms, max ${loaded.latency.maxMs} ms, lost ${loaded.lost}`,
  )
  const meanReloadMs = (from: typeof before, to: typeof before) => {
    const sum = 'shell_snapshot_reload_duration_seconds_sum'
    const count = 'shell_snapshot_reload_duration_seconds_count'
    return round(
      (1000 * (sample(to, sum) - sample(from, sum))) / (sample(to, count) - sample(from, count)),
    )
  }
  const reloadIdleMs = meanReloadMs(before, between)
  const reloadLoadedMs = meanReloadMs(between, after)
  return {
    id: 'refresh',
    rows: [
      {
        scenario: `refresh idle, COMMIT to new ETag (${idle.commits} commits)`,
        p50Ms: idle.latency.p50Ms,
        p99Ms: idle.latency.p99Ms,
        value: `p99 ${idle.latency.p99Ms} ms`,
      },
      {
        scenario: `refresh under load, COMMIT to new ETag (${loaded.commits} commits)`,
        requestsPerSecond: load.requestsPerSecond,
        p50Ms: loaded.latency.p50Ms,
        p99Ms: loaded.latency.p99Ms,
        value: `p99 ${loaded.latency.p99Ms} ms`,
        target: `p99 <= ${TARGETS.refreshP99Ms} ms`,
        result: loaded.lost === 0 && loaded.latency.p99Ms <= TARGETS.refreshP99Ms ? 'pass' : 'miss',
      },
    ],
    notes: [
      `service reload (read + build) mean ${reloadIdleMs} ms idle, ${reloadLoadedMs} ms under load (shell_snapshot_reload_duration_seconds); lost commits: ${idle.lost} idle, ${loaded.lost} under load`,
      `the load during the loaded measurement: ${Math.round(load.requestsPerSecond)} req/s, p99 ${load.latency.p99Ms} ms, statuses ${JSON.stringify(load.statuses)}`,
    ],
    detail: {
      idle,
      underLoad: loaded,
      load: { ...load, histogram: undefined },
      reloadMeanMs: { idle: reloadIdleMs, underLoad: reloadLoadedMs },
    },
  }
}

/** Snapshot build time (in this process and in the service) and the service's resident memory. */
export async function runSnapshotScenario(
  env: BenchEnvironment,
  memory: MemoryWatch,
  log: (line: string) => void,
): Promise<ScenarioOutcome> {
  const metrics = await readMetrics(env.large.url)
  const cost: SnapshotBuildCost = await measureSnapshotBuild(
    env.largeDatabaseUrl,
    5,
    env.hotApp,
    env.users,
  )
  log(
    `snapshot: read ${cost.readMs.median} ms, build ${cost.buildMs.median} ms (median of 5), ${cost.variantsMs.distinctVariants} variants of ${env.hotApp} in ${cost.variantsMs.ms} ms`,
  )
  const firstReloadMs = round(memory.firstReloadMs())
  const steadyRss = memory.maxRssBytes(STEADY_PHASES)
  const stormRss = memory.maxRssBytes(STORM_PHASES)
  const peakBytes = await readPeakRss(env.large.pid)
  const peakMb = peakBytes === null ? null : peakBytes / MB
  // The same build on the seeds alone: what the process costs without the large data set.
  const smallRssMb = sample(await readMetrics(env.small.url), 'process_resident_memory_bytes') / MB
  const smallPeakBytes = await readPeakRss(env.small.pid)
  return {
    id: 'snapshot',
    rows: [
      {
        scenario: `snapshot build, ${cost.rows.apps} apps / ${cost.rows.menuItems} items (in-process, median)`,
        value: `${cost.buildMs.median} ms`,
        target: `<= ${TARGETS.buildMs} ms`,
        result: cost.buildMs.median <= TARGETS.buildMs ? 'pass' : 'miss',
      },
      {
        scenario: 'service first reload (read + build, from /metrics)',
        value: `${firstReloadMs} ms`,
        target: `<= ${TARGETS.buildMs} ms`,
        result: firstReloadMs <= TARGETS.buildMs ? 'pass' : 'miss',
      },
      ...(steadyRss === null
        ? []
        : [
            {
              scenario: `service RSS holding the large data set (max of ${steadyRss.phases.join(', ')})`,
              value: `${(steadyRss.bytes / MB).toFixed(0)} MB`,
              target: `<= ${TARGETS.rssMb} MB`,
              result: steadyRss.bytes / MB <= TARGETS.rssMb ? ('pass' as const) : ('miss' as const),
            },
          ]),
      ...(stormRss === null
        ? []
        : [
            {
              scenario: `service RSS after ${stormRss.phases.join(', ')} (max; garbage, see notes)`,
              value: `${(stormRss.bytes / MB).toFixed(0)} MB`,
            },
          ]),
      ...(peakMb === null
        ? []
        : [
            {
              scenario: 'service peak RSS over the run (VmHWM, storms included)',
              value: `${peakMb.toFixed(0)} MB`,
            },
          ]),
    ],
    notes: [
      `rows read in ${cost.readMs.median} ms (median); rendering ${cost.variantsMs.distinctVariants} role-set variants of ${env.hotApp} for ${cost.variantsMs.callers} callers took ${cost.variantsMs.ms} ms (lazily, after each swap)`,
      `service on the seeds alone (the one-app reference; a token flood too with BENCH_ONLY=new-token-heap): RSS ${smallRssMb.toFixed(0)} MB now, peak ${smallPeakBytes === null ? 'n/a' : `${(smallPeakBytes / MB).toFixed(0)} MB`}`,
      `service RSS by phase, MB (heap used/total, external): ${memory.describe()}; heap used now ${(sample(metrics, 'nodejs_heap_size_used_bytes') / MB).toFixed(0)} MB`,
      'the memory target is about holding the data set: the steady phases. A flood of new tokens (every one verified and cached, 10,000 kept) or a storm of reloads (one every few ms) promotes short-lived garbage to the old generation, which V8 lets grow to a multiple of the live heap before it collects; that headroom, not the data, is the difference (the seeds-only service under the same flood: BENCH_ONLY=new-token-heap,snapshot)',
    ],
    detail: {
      inProcess: cost,
      firstReloadMs,
      rssByPhase: memory.phases(),
      peakRssBytes: peakBytes,
    },
  }
}

export type MemoryWatch = ReturnType<typeof createMemoryWatch>

/** Phases in which the service holds the large data set and serves cached callers. */
const STEADY_PHASES: ReadonlySet<string> = new Set([
  'ready',
  'shell-200',
  'shell-304',
  'apps',
  'one-app',
  'shell-200-fixed-rate',
])
/** Phases that churn memory on purpose: new tokens on every request, a reload every few ms. */
const STORM_PHASES: ReadonlySet<string> = new Set([
  'new-token',
  'new-token-body',
  'new-token-heap',
  'refresh',
])

/** RSS of the large service after each phase. */
export function createMemoryWatch(serviceUrl: string) {
  const phases: {
    phase: string
    rssBytes: number
    heapUsedBytes: number
    heapTotalBytes: number
    externalBytes: number
  }[] = []
  let firstReloadMs = Number.NaN
  return {
    async sample(phase: string) {
      const metrics = await readMetrics(serviceUrl)
      if (phases.length === 0) {
        firstReloadMs =
          (1000 * sample(metrics, 'shell_snapshot_reload_duration_seconds_sum')) /
          sample(metrics, 'shell_snapshot_reload_duration_seconds_count')
      }
      phases.push({
        phase,
        rssBytes: sample(metrics, 'process_resident_memory_bytes'),
        heapUsedBytes: sample(metrics, 'nodejs_heap_size_used_bytes'),
        heapTotalBytes: sample(metrics, 'nodejs_heap_size_total_bytes'),
        externalBytes: sample(metrics, 'nodejs_external_memory_bytes'),
      })
    },
    firstReloadMs: () => firstReloadMs,
    /** The largest RSS among the given phases, and which of them ran; null when none did. */
    maxRssBytes(among: ReadonlySet<string>): { bytes: number; phases: string[] } | null {
      const sampled = phases.filter((entry) => among.has(entry.phase))
      if (sampled.length === 0) return null
      return {
        bytes: Math.max(...sampled.map((entry) => entry.rssBytes)),
        phases: sampled.map((entry) => entry.phase),
      }
    },
    phases: () => phases,
    describe: () =>
      phases
        .map(
          (entry) =>
            `${entry.phase} ${(entry.rssBytes / MB).toFixed(0)} (heap ${(entry.heapUsedBytes / MB).toFixed(0)}/${(entry.heapTotalBytes / MB).toFixed(0)}, external ${(entry.externalBytes / MB).toFixed(0)})`,
        )
        .join(', '),
  }
}

/** Linux's high-water mark of the process's resident set; null elsewhere. */
async function readPeakRss(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]
    return kb === undefined ? null : Number(kb) * 1024
  } catch {
    return null
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10
}
