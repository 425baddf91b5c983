export type BenchSettings = ReturnType<typeof readBenchSettings>

/** The BENCH_* variables (bench/README.md), read once at start. */
export function readBenchSettings(env: NodeJS.ProcessEnv = process.env) {
  const only = (env.BENCH_ONLY ?? '').split(',').map((id) => id.trim())
  return {
    /** Seconds of each measured leg: short, so that a drift of the machine's speed spans few of them. */
    durationS: readNumber(env, 'BENCH_DURATION', 2, 1),
    /** Seconds of load on each side before a comparison's first leg, not counted, so JIT and caches are warm. */
    warmupS: readNumber(env, 'BENCH_WARMUP', 2, 0),
    /** Keep-alive connections, one request in flight each. */
    connections: readNumber(env, 'BENCH_CONNECTIONS', 50, 1),
    /**
     * A-B pairs per comparison. Single pairs on this 2-core VM spread by some
     * 15 % either way; the median of 15 moves by about 5 % between runs.
     */
    pairs: readNumber(env, 'BENCH_PAIRS', 15, 1),
    /** Generated apps on top of the seed app. */
    apps: readNumber(env, 'BENCH_APPS', 5_000, 1),
    refreshCommits: readNumber(env, 'BENCH_REFRESH_COMMITS', 100, 1),
    /** Larger than TOKEN_CACHE_MAX, so no token is still cached when it comes round again. */
    newTokens: readNumber(env, 'BENCH_NEW_TOKENS', 30_000, 100),
    /** Scenario ids; null: every scenario. */
    only: only.some((id) => id !== '') ? only.filter((id) => id !== '') : null,
    /** The servers run with `node --cpu-prof`. */
    profile: env.BENCH_PROFILE === '1',
  }
}

function readNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const text = env[name]?.trim()
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name}: "${text}" is not a whole number >= ${min}`)
  }
  return value
}
