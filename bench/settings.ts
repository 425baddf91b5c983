import type { LoadGeneratorMode } from './load-client.js'

/** Scenario ids (they run in the order of bench/scenarios.ts); BENCH_ONLY picks some of them. */
export const SCENARIO_IDS = [
  'shell-200',
  'shell-304',
  'apps',
  'one-app',
  'new-token',
  'refresh',
  'snapshot',
  'new-token-body',
  'new-token-heap',
  'shell-200-fixed-rate',
] as const
/**
 * Investigations: run only when BENCH_ONLY names them. `new-token-body`:
 * verify-only plus the shell bytes; `new-token-heap`: new tokens on the large
 * and the small service; `shell-200-fixed-rate`: both sides at one open-loop
 * rate, so CPU per response compares the servers with nobody saturated.
 */
const INVESTIGATIONS: readonly string[] = [
  'new-token-body',
  'new-token-heap',
  'shell-200-fixed-rate',
]
const DEFAULT_SCENARIOS: readonly ScenarioId[] = SCENARIO_IDS.filter(
  (id) => !INVESTIGATIONS.includes(id),
)
export type ScenarioId = (typeof SCENARIO_IDS)[number]

export interface BenchSettings {
  /** BENCH_DURATION: seconds of each measured leg. */
  readonly durationS: number
  /** BENCH_WARMUP: seconds of load before each measured leg, not counted. */
  readonly warmupS: number
  /** BENCH_CONNECTIONS: concurrent keep-alive connections, one request in flight each. */
  readonly connections: number
  /** BENCH_PAIRS: A-B pairs per comparison (service leg, then baseline leg). */
  readonly pairs: number
  /** BENCH_APPS: generated apps on top of the seeds. */
  readonly apps: number
  /** BENCH_REFRESH_COMMITS: commits per refresh measurement. */
  readonly refreshCommits: number
  /**
   * BENCH_NEW_TOKENS: the pool of never-cached tokens. It is cycled, and it
   * is larger than the service's token cache (TOKEN_CACHE_MAX, 10,000 by
   * default), so a token comes round again only after the least-recently-used
   * cache has evicted it: every request is a full verification (the report
   * checks the miss counter).
   */
  readonly newTokens: number
  /** BENCH_LOADGEN: `child` (autocannon in its own process) or `inline`. */
  readonly loadgen: LoadGeneratorMode
  /** BENCH_PROFILE=1: the services and the baseline run with --cpu-prof. */
  readonly profile: boolean
  /** BENCH_ONLY: comma-separated scenario ids; all but the investigations when unset. */
  readonly only: ReadonlySet<ScenarioId>
  /** BENCH_SERVICE_ARGS: extra node flags for the service processes, e.g. --max-old-space-size=192. */
  readonly serviceArgs: readonly string[]
  /**
   * BENCH_SERVICE_MAIN: the service's entry point, `dist/main.js` by default;
   * another build (a candidate fix) can be measured on the same scenarios.
   */
  readonly serviceMain: string
}

export function readBenchSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  const only = (env.BENCH_ONLY ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '')
  for (const id of only) {
    if (!(SCENARIO_IDS as readonly string[]).includes(id)) {
      throw new Error(`BENCH_ONLY: unknown scenario "${id}"; one of ${SCENARIO_IDS.join(', ')}`)
    }
  }
  const loadgen = env.BENCH_LOADGEN ?? 'child'
  if (loadgen !== 'child' && loadgen !== 'inline') {
    throw new Error(`BENCH_LOADGEN: "${loadgen}" is not child or inline`)
  }
  return {
    durationS: readNumber(env, 'BENCH_DURATION', 5, 1),
    warmupS: readNumber(env, 'BENCH_WARMUP', 2, 0),
    connections: readNumber(env, 'BENCH_CONNECTIONS', 10, 1),
    pairs: readNumber(env, 'BENCH_PAIRS', 2, 1),
    apps: readNumber(env, 'BENCH_APPS', 1_000, 1),
    refreshCommits: readNumber(env, 'BENCH_REFRESH_COMMITS', 100, 1),
    newTokens: readNumber(env, 'BENCH_NEW_TOKENS', 30_000, 100),
    loadgen,
    profile: env.BENCH_PROFILE === '1' || env.BENCH_PROFILE === 'true',
    only: new Set((only.length === 0 ? DEFAULT_SCENARIOS : only) as ScenarioId[]),
    serviceMain: env.BENCH_SERVICE_MAIN?.trim() || 'dist/main.js',
    serviceArgs: (env.BENCH_SERVICE_ARGS ?? '').split(/\s+/).filter((arg) => arg !== ''),
  }
}

function readNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const text = env[name]?.trim()
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value < min)
    throw new Error(`${name}: "${text}" is not a number >= ${min}`)
  return value
}
