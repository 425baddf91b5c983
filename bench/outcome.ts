import type { Comparison } from './compare-legs.js'
import type { ScenarioId } from './settings.js'

/** One line of the table; empty cells are undefined. */
export interface ReportRow {
  readonly scenario: string
  readonly requestsPerSecond?: number
  readonly p50Ms?: number
  readonly p99Ms?: number
  /** Server CPU time per response, µs. */
  readonly cpuUsPerResponse?: number
  /** A ratio (`0.93x`) or a measure (`412 ms`, `183 MB`). */
  readonly value?: string
  readonly target?: string
  readonly result?: 'pass' | 'miss'
}

export interface ScenarioOutcome {
  readonly id: ScenarioId
  readonly rows: readonly ReportRow[]
  readonly notes: readonly string[]
  readonly detail: unknown
}

/** Targets of issue 6; reported, never asserted. */
export const TARGETS = {
  shell200Ratio: 0.9,
  shell304Ratio: 1.0,
  newTokenRatio: 0.8,
  oneAppRatio: 0.95,
  refreshP99Ms: 50,
  buildMs: 1_000,
  rssMb: 256,
} as const

/** The two rows of an A-B comparison, its notes, and its pass or miss. */
export function comparisonOutcome(
  id: ScenarioId,
  comparison: Comparison,
  options: {
    title: string
    baselineTitle: string
    minRatio: number | null
    notes?: string[]
    extra?: Record<string, unknown>
  },
): ScenarioOutcome {
  const { a, b, ratio } = comparison
  const unexpected = a.unexpectedResponses + b.unexpectedResponses
  const pass = options.minRatio === null ? undefined : ratio >= options.minRatio && unexpected === 0
  const notes = [...(options.notes ?? [])]
  if (comparison.cpuRatio !== null) {
    notes.push(
      `server CPU per response: ${a.label} ${a.cpuUsPerRequest} µs, ${b.label} ${b.cpuUsPerRequest} µs (efficiency ratio ${comparison.cpuRatio.toFixed(2)}x); load generator at ${a.cpu.loadGenerator}% / ${b.cpu.loadGenerator}% of a core${Math.max(a.cpu.loadGenerator ?? 0, b.cpu.loadGenerator ?? 0) >= 90 ? ': near its limit, so the req/s ratio understates the gap' : ''}`,
    )
  }
  notes.push(
    `ratio per pair: ${comparison.pairRatios.map((value) => value.toFixed(3)).join(', ')}${comparison.disturbedPairs > 0 ? ` (${comparison.disturbedPairs} disturbed pair(s) ${comparison.setAside.length > 0 ? 'set aside' : 'kept: no clean pair'})` : ''}; CPU % of a core, ${a.label} legs: server ${a.cpu.server}, load generator ${a.cpu.loadGenerator}, other ${a.cpu.other}; ${b.label} legs: server ${b.cpu.server}, load generator ${b.cpu.loadGenerator}, other ${b.cpu.other}`,
  )
  if (unexpected > 0) {
    notes.push(
      `unexpected responses: ${a.label} ${a.unexpectedResponses} (${JSON.stringify(a.statuses)}), ${b.label} ${b.unexpectedResponses} (${JSON.stringify(b.statuses)})`,
    )
  }
  return {
    id,
    rows: [
      {
        scenario: options.title,
        requestsPerSecond: a.requestsPerSecond,
        p50Ms: a.latency.p50Ms,
        p99Ms: a.latency.p99Ms,
        ...(a.cpuUsPerRequest !== null && { cpuUsPerResponse: a.cpuUsPerRequest }),
        value: `${ratio.toFixed(2)}x`,
        ...(options.minRatio !== null && {
          target: `>= ${options.minRatio.toFixed(2)}x`,
          result: pass ? ('pass' as const) : ('miss' as const),
        }),
      },
      {
        scenario: `  vs ${options.baselineTitle}`,
        requestsPerSecond: b.requestsPerSecond,
        p50Ms: b.latency.p50Ms,
        p99Ms: b.latency.p99Ms,
        ...(b.cpuUsPerRequest !== null && { cpuUsPerResponse: b.cpuUsPerRequest }),
      },
    ],
    notes,
    detail: { ...comparison, ...options.extra },
  }
}
