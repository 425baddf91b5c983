import type { BenchEnvironment } from './environment.js'
import type { LoadGenerator, TokenPool } from './load-generator.js'
import type { NodeProcess } from './node-process.js'
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

/** One side of an A-B comparison (compare-legs.ts). */
export interface Side {
  /** The row's title. */
  readonly label: string
  /** The process answering, whose CPU time is read around each leg. */
  readonly server: NodeProcess
  readonly path: string
  readonly tokens: TokenPool
  readonly headers?: Readonly<Record<string, string>>
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
