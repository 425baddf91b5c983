import type { Side } from './compare-legs.js'
import type { BenchEnvironment } from './environment.js'
import type { LoadGenerator } from './load-generator.js'
import type { BenchSettings } from './settings.js'

/** One line of the results table; empty cells are left out. */
export interface Row {
  readonly scenario: string
  readonly requestsPerSecond?: number
  readonly p50Ms?: number
  readonly p99Ms?: number
  /** Server CPU time (user + system, all threads) per response. */
  readonly cpuUsPerResponse?: number
  /** A ratio (`0.93x`) or a measure (`412 ms`, `183 MB`). */
  readonly value?: string
  readonly target?: string
  readonly result?: 'pass' | 'miss'
}

export interface ScenarioResult {
  readonly rows: readonly Row[]
  /** Printed under the table: what a reader needs to trust the rows. */
  readonly notes: readonly string[]
}

export interface ScenarioContext {
  readonly env: BenchEnvironment
  readonly settings: BenchSettings
  readonly load: LoadGenerator
  log(line: string): void
  /** Legs A B A B; the first row holds A's req/s over B's, checked against `minRatio`. */
  compare(a: Side, b: Side, minRatio: number | null): Promise<ScenarioResult>
}

/** A file of bench/scenarios/ and a line in bench/scenarios.ts. */
export interface Scenario {
  /** Its name in BENCH_ONLY. */
  readonly id: string
  run(context: ScenarioContext): Promise<ScenarioResult>
}

export const passOrMiss = (holds: boolean): Row['result'] => (holds ? 'pass' : 'miss')
