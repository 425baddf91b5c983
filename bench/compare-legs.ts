import { LatencyHistogram, type LatencySummary } from './latency-histogram.js'
import type { LoadGenerator } from './load-client.js'
import type { LoadJob, LoadResult } from './load-runner.js'
import { startCpuMeter, waitForQuietMachine } from './process-cpu.js'
import type { BenchSettings } from './settings.js'

export interface Side {
  readonly label: string
  /** The server process, whose CPU use is measured during each leg. */
  readonly pid: number
  readonly url: string
  readonly tokenSet: string
  readonly conditional?: boolean
  readonly tokenOrder?: LoadJob['tokenOrder']
  readonly overallRate?: number
  /** Every response of the side must have this status; others are reported. */
  readonly expectedStatus: number
}

export type LegSummary = Omit<Leg, 'histogram'>

export interface SideResult {
  readonly label: string
  readonly url: string
  /** Mean over the side's legs. */
  readonly requestsPerSecond: number
  /** Over every response of every leg of the side. */
  readonly latency: LatencySummary
  readonly statuses: Record<string, number>
  readonly unexpectedResponses: number
  readonly requests: number
  readonly warmupRequests: number
  readonly bytesPerResponse: number
  /**
   * Server CPU time per response (µs), from /proc: unlike req/s it does not
   * depend on whether the load generator or the server was the bottleneck.
   */
  readonly cpuUsPerRequest: number | null
  /** Mean share of one core (%) over the legs. */
  readonly cpu: {
    readonly server: number | null
    readonly loadGenerator: number | null
    readonly other: number | null
  }
  readonly legs: readonly LegSummary[]
}

export interface Comparison {
  readonly a: SideResult
  readonly b: SideResult
  /** Mean req/s of A over mean req/s of B. */
  readonly ratio: number
  /** B's server CPU per response over A's: the efficiency ratio, free of the load generator's limit. */
  readonly cpuRatio: number | null
  /** A over B within each pair used: how much the ratio moved between pairs. */
  readonly pairRatios: readonly number[]
  /** Pairs during which other processes kept the machine busy. */
  readonly disturbedPairs: number
  /** Disturbed pairs left out of the numbers (all of them, unless no pair was clean). */
  readonly setAside: readonly { a: LegSummary; b: LegSummary }[]
}

/**
 * A pair is set aside as disturbed when, during either leg, processes other
 * than the server and the load generator kept more than this share of one
 * core busy (someone's test run on a shared machine).
 */
const DISTURBED_OTHER_CPU = 25
/** Longest wait, before each pair, for other processes to leave the machine alone. */
const QUIET_WAIT_MS = 5_000

/**
 * A B A B …: every pair measures both sides within seconds of each other, so
 * a machine that slows down (thermal, a neighbour) moves both, not the ratio.
 * A disturbed pair is repeated once per comparison; the ratio is taken over
 * the undisturbed pairs when there are any.
 */
export async function compareLegs(
  load: LoadGenerator,
  settings: BenchSettings,
  name: string,
  a: Side,
  b: Side,
  log: (line: string) => void,
): Promise<Comparison> {
  const pairs: { a: Leg; b: Leg; disturbed: boolean }[] = []
  const clean = () => pairs.filter((pair) => !pair.disturbed).length
  while (clean() < settings.pairs && pairs.length < settings.pairs + 1) {
    const number = pairs.length + 1
    const busy = await waitForQuietMachine(DISTURBED_OTHER_CPU, QUIET_WAIT_MS)
    if (busy !== null && busy > DISTURBED_OTHER_CPU) {
      log(`${name} pair ${number}: other processes keep ${busy}% of a core busy; measuring anyway`)
    }
    const legA = await runLeg(load, settings, a, `${name} A${number}`, log)
    const legB = await runLeg(load, settings, b, `${name} B${number}`, log)
    const disturbed = [legA, legB].some((leg) => (leg.cpu.other ?? 0) > DISTURBED_OTHER_CPU)
    if (disturbed) log(`${name} pair ${number} disturbed by other processes; set aside`)
    pairs.push({ a: legA, b: legB, disturbed })
  }
  const used = clean() > 0 ? pairs.filter((pair) => !pair.disturbed) : pairs
  const sideA = summarizeSide(
    a,
    used.map((pair) => pair.a),
  )
  const sideB = summarizeSide(
    b,
    used.map((pair) => pair.b),
  )
  return {
    a: sideA,
    b: sideB,
    ratio: round(sideA.requestsPerSecond / sideB.requestsPerSecond, 3),
    cpuRatio:
      sideA.cpuUsPerRequest === null || sideB.cpuUsPerRequest === null
        ? null
        : round(sideB.cpuUsPerRequest / sideA.cpuUsPerRequest, 3),
    pairRatios: used.map((pair) => round(pair.a.requestsPerSecond / pair.b.requestsPerSecond, 3)),
    disturbedPairs: pairs.length - clean(),
    setAside: pairs
      .filter((pair) => pair.disturbed && used.indexOf(pair) < 0)
      .map((pair) => ({ a: strip(pair.a), b: strip(pair.b) })),
  }
}

async function runLeg(
  load: LoadGenerator,
  settings: BenchSettings,
  side: Side,
  label: string,
  log: (line: string) => void,
): Promise<Leg> {
  const job: LoadJob = {
    url: side.url,
    connections: settings.connections,
    warmupS: 0,
    durationS: settings.durationS,
    tokenSet: side.tokenSet,
    conditional: side.conditional ?? false,
    tokenOrder: side.tokenOrder ?? 'per-connection',
    ...(side.overallRate !== undefined && { overallRate: side.overallRate }),
  }
  const warmup =
    settings.warmupS > 0 ? await load.run({ ...job, durationS: settings.warmupS }) : null
  const meter = await startCpuMeter({ server: side.pid, loadGenerator: load.pid })
  const result = await load.run(job)
  const cpu = await meter.stop()
  const serverShare = cpu.server ?? null
  const cpuUsPerRequest =
    serverShare === null || result.requests === 0
      ? null
      : round((serverShare * 1e4 * result.elapsedS) / result.requests, 1)
  log(
    `${label} ${side.label}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.latency.p50Ms} ms, p99 ${result.latency.p99Ms} ms, statuses ${JSON.stringify(result.statuses)}, CPU % of a core: server ${cpu.server} (${cpuUsPerRequest} µs/response), load generator ${cpu.loadGenerator}, other ${cpu.other}`,
  )
  return { ...result, warmupRequests: warmup?.requests ?? 0, cpu, cpuUsPerRequest }
}

function strip({ histogram: _histogram, ...leg }: Leg): LegSummary {
  return leg
}

type Leg = LoadResult & { cpu: Record<string, number | null>; cpuUsPerRequest: number | null }

function summarizeSide(side: Side, legs: readonly Leg[]): SideResult {
  const statuses: Record<string, number> = {}
  for (const leg of legs)
    for (const [status, count] of Object.entries(leg.statuses))
      statuses[status] = (statuses[status] ?? 0) + count
  const requests = legs.reduce((sum, leg) => sum + leg.requests, 0)
  const errors = legs.reduce((sum, leg) => sum + leg.errors + leg.timeouts, 0)
  return {
    label: side.label,
    url: side.url,
    requestsPerSecond: round(
      legs.reduce((sum, leg) => sum + leg.requestsPerSecond, 0) / legs.length,
      1,
    ),
    latency: LatencyHistogram.fromSparse(legs.map((leg) => leg.histogram)).summary(),
    statuses,
    unexpectedResponses: requests - (statuses[side.expectedStatus] ?? 0) + errors,
    requests,
    warmupRequests: legs.reduce((sum, leg) => sum + leg.warmupRequests, 0),
    bytesPerResponse: Math.round(
      legs.reduce((sum, leg) => sum + leg.bytesPerResponse, 0) / legs.length,
    ),
    cpuUsPerRequest: meanCpuPerRequest(legs),
    cpu: {
      server: meanOf(legs, 'server'),
      loadGenerator: meanOf(legs, 'loadGenerator'),
      other: meanOf(legs, 'other'),
    },
    legs: legs.map(strip),
  }
}

function meanCpuPerRequest(legs: readonly Leg[]): number | null {
  const values = legs.map((leg) => leg.cpuUsPerRequest).filter((value) => value !== null)
  return values.length === 0
    ? null
    : round(values.reduce((sum, value) => sum + value, 0) / values.length, 1)
}

function meanOf(legs: readonly Leg[], name: string): number | null {
  const values = legs.map((leg) => leg.cpu[name]).filter((value) => typeof value === 'number')
  return values.length === 0
    ? null
    : Math.round(values.reduce((sum, value) => sum + value, 0) / values.length)
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}
