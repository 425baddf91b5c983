import type { NodeProcess } from './node-process.js'
import type { BurstFigures, LoadFigures, ProbeSample } from './overload-load.js'
import { passOrMiss, type Row } from './scenario.js'

/**
 * The contract counts from the third second, once the load's own connections are in: the probes,
 * and here the 200s per second too (the opening storm of connections is shown beside them).
 */
export const FROM_S = 3
/** wrk's timeout: no request may wait this long. */
export const MAX_WAIT_MS = 10_000
/** Probes on new connections: the 99th percentile, and every one (the kubelet's 2 s timeout). */
const MAX_PROBE_P99_MS = 1_000
const MAX_PROBE_MS = 2_000
/** After the load, everything answers as before within this. */
const MAX_RECOVERY_MS = 3_000
/** A burst the instance can answer is answered in full within this (CONTRACT "Under overload"). */
const MAX_BURST_MS = 3_000

/** One load of the overload scenario (scenarios/overload.ts). */
export interface Leg {
  readonly label: string
  readonly server: NodeProcess
  readonly path: string
  readonly pool: 'new' | 'warm'
  readonly connections: number
  readonly honourRetryAfter: boolean
}

export interface LegResult {
  readonly leg: Leg
  readonly load: LoadFigures
  readonly probes: readonly ProbeSample[]
  /** The same probes on ADMIN_PORT, when the server has one. */
  readonly adminProbes?: readonly ProbeSample[]
  /** Milliseconds from the load's end until probes and a new token's shell all answered 200. */
  readonly recoveryMs: number | null
  /** When the listen queue held no backlog for good, s into the load; null: never; NaN: not read. */
  readonly queueEmptyFromS: number | null
  readonly queueMax: number
}

/** 200s per second over the load's whole seconds from `fromS` on (0: the whole load). */
export function servedPerSecond(load: LoadFigures, fromS = 0): number {
  if (fromS === 0) return (load.statuses['200'] ?? 0) / load.durationS
  const lastSecond = Math.floor(load.durationS) - 1
  let served = 0
  for (let second = fromS; second <= lastSecond; second += 1) {
    served += load.servedInSecond[String(second)] ?? 0
  }
  return served / (lastSecond - fromS + 1)
}

/** The leg's two rows: its answers and its probes; `floor`: the 200s per second it must reach. */
export function describeLeg(result: LegResult, floor: number | null, suffix = ''): Row[] {
  const { load, probes, leg } = result
  const served = servedPerSecond(load, FROM_S)
  const shed = (load.statuses['503'] ?? 0) / load.durationS
  const others = Object.entries(load.statuses).filter(
    ([status]) => !['200', '503'].includes(status),
  )
  const timeouts = load.errorsByKind.timeout ?? 0
  // Without 503s every answer is a 200, and wrk's own figures are theirs.
  const timing =
    shed === 0 && load.served.timed === 0
      ? { p50Ms: load.all.p50Ms, p99Ms: load.all.p99Ms, maxMs: load.all.maxMs }
      : load.served
  const lateMs = probes.filter((probe) => probe.atS >= FROM_S).map((probe) => probe.ms)
  const probeP99 = percentile(lateMs, 0.99)
  const probeMax = Math.max(...lateMs)
  const allMax = Math.max(...probes.map((probe) => probe.ms))
  const ok = probes.filter((probe) => probe.status === 200).length
  const answersHold =
    floor !== null &&
    served >= floor &&
    timeouts === 0 &&
    timing.maxMs < MAX_WAIT_MS &&
    others.length === 0
  const probesHold =
    probeP99 <= MAX_PROBE_P99_MS &&
    probeMax <= MAX_PROBE_MS &&
    ok === probes.length &&
    result.recoveryMs !== null &&
    result.recoveryMs <= MAX_RECOVERY_MS
  const otherStatuses = others.map(([status, count]) => `, ${count} × ${status}`).join('')
  return [
    {
      scenario: `overload: ${leg.label}${suffix}`,
      requestsPerSecond: served,
      p50Ms: timing.p50Ms,
      p99Ms: timing.p99Ms,
      value: `all ${formatRate(servedPerSecond(load))}/s, shed ${formatRate(shed)}/s, max ${formatDuration(timing.maxMs)}, ${timeouts} timeouts${otherStatuses}`,
      ...(floor === null
        ? {}
        : { target: `>= ${formatRate(floor)}/s, none 10 s`, result: passOrMiss(answersHold) }),
    },
    {
      scenario: `  probes on new connections; ${describeQueue(result)}`,
      p50Ms: percentile(lateMs, 0.5),
      p99Ms: probeP99,
      value: `max ${formatDuration(probeMax)} (all: ${formatDuration(allMax)}), ${ok}/${probes.length} 200, after ${result.recoveryMs === null ? 'never' : formatDuration(result.recoveryMs)}`,
      // On PORT the contract holds once the load's connections are in and its clients wait.
      ...(floor === null || !leg.honourRetryAfter
        ? {}
        : { target: 'p99 <= 1 s, max <= 2 s, after <= 3 s', result: passOrMiss(probesHold) }),
    },
    ...(result.adminProbes === undefined ? [] : [describeAdminProbes(result.adminProbes)]),
  ]
}

/** ADMIN_PORT's probes, from the load's first second, whatever its clients do. */
function describeAdminProbes(probes: readonly ProbeSample[]): Row {
  const ms = probes.map((probe) => probe.ms)
  const p99 = percentile(ms, 0.99)
  const max = Math.max(...ms)
  const ok = probes.filter((probe) => probe.status === 200).length
  return {
    scenario: '  probes and scrapes on ADMIN_PORT, new connections, the whole load',
    p50Ms: percentile(ms, 0.5),
    p99Ms: p99,
    value: `max ${formatDuration(max)}, ${ok}/${probes.length} 200`,
    target: 'p99 <= 1 s, max <= 2 s',
    result: passOrMiss(p99 <= MAX_PROBE_P99_MS && max <= MAX_PROBE_MS && ok === probes.length),
  }
}

/** The burst's row: every request answered, none shed, within 3 s. */
export function describeBurst(label: string, burst: BurstFigures): Row {
  const sent = Object.values(burst.statuses).reduce((sum, count) => sum + count, 0)
  const shed = burst.statuses['503'] ?? 0
  const unanswered = burst.statuses['0'] ?? 0
  const byStatus = Object.entries(burst.statuses)
    .map(([status, count]) => `${count} × ${status === '0' ? 'none' : status}`)
    .join(', ')
  return {
    scenario: `overload: ${label}`,
    value: `${byStatus}; slowest ${formatDuration(burst.slowestMs)}`,
    target: `all ${sent} answered, none 503, within 3 s`,
    result: passOrMiss(shed === 0 && unanswered === 0 && burst.slowestMs <= MAX_BURST_MS),
  }
}

function describeQueue(result: LegResult): string {
  if (result.queueEmptyFromS === null)
    return `listen queue never clear (at most ${result.queueMax})`
  if (Number.isNaN(result.queueEmptyFromS)) return 'listen queue not read'
  return `listen queue clear from ${result.queueEmptyFromS.toFixed(1)} s (at most ${result.queueMax})`
}

function percentile(values: number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(share * sorted.length) - 1)] ?? Number.NaN
}

function formatRate(perSecond: number): string {
  return Math.round(perSecond).toLocaleString('en-US')
}

function formatDuration(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
}
