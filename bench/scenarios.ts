import { compareLegs, type Side } from './compare-legs.js'
import { type BenchEnvironment, requestForEachToken, SEED_APP } from './environment.js'
import {
  createMemoryWatch,
  runRefreshScenario,
  runSnapshotScenario,
} from './freshness-scenarios.js'
import { readMetrics, sample } from './metrics-reader.js'
import { comparisonOutcome, type ScenarioOutcome, TARGETS } from './outcome.js'
import type { BenchSettings, ScenarioId } from './settings.js'

/** The open-loop rate of the fixed-rate investigation: well under both sides' limits here. */
const FIXED_RATE = 15_000

/** Runs the scenarios BENCH_ONLY selects, in this order, sampling the large service's memory after each. */
export async function runScenarios(
  env: BenchEnvironment,
  settings: BenchSettings,
  log: (line: string) => void,
): Promise<ScenarioOutcome[]> {
  const outcomes: ScenarioOutcome[] = []
  const memory = createMemoryWatch(env.large.url)
  await memory.sample('ready')
  const shellPath = `/api/v1/shell/${env.hotApp}`
  const service = (path: string, extra: Partial<Side> = {}): Side => ({
    label: 'service',
    pid: env.large.pid,
    url: `${env.large.url}${path}`,
    tokenSet: 'warm',
    expectedStatus: 200,
    ...extra,
  })
  const baseline = (path: string, extra: Partial<Side> = {}): Side => ({
    label: 'baseline',
    pid: env.baseline.pid,
    url: `${env.baseline.url}${path}`,
    tokenSet: 'warm',
    expectedStatus: 200,
    ...extra,
  })
  const run = async (id: ScenarioId, work: () => Promise<ScenarioOutcome>) => {
    if (!settings.only.has(id)) return
    log(`— ${id}`)
    outcomes.push(await work())
    await memory.sample(id)
  }

  await run('shell-200', async () => {
    const comparison = await compareLegs(
      env.load,
      settings,
      'shell-200',
      service(shellPath),
      baseline(shellPath),
      log,
    )
    return comparisonOutcome('shell-200', comparison, {
      title: `shell 200, warm cache, ${env.warmTokens.length} callers`,
      baselineTitle: 'baseline 200 (same bytes, no auth)',
      minRatio: TARGETS.shell200Ratio,
      notes: [
        `service bodies average ${env.recorded.shellBytesMean} B; the baseline replays the median caller's ${env.recorded.shellBytes} B`,
      ],
    })
  })

  await run('shell-200-fixed-rate', async () => {
    // Both sides at the same open-loop rate, below either one's limit: neither the server nor the
    // load generator saturates, so CPU per response compares the servers' own work.
    const rate = { overallRate: FIXED_RATE }
    const comparison = await compareLegs(
      env.load,
      settings,
      'shell-200-fixed-rate',
      service(shellPath, rate),
      baseline(shellPath, rate),
      log,
    )
    return comparisonOutcome('shell-200-fixed-rate', comparison, {
      title: `shell 200, warm cache, fixed ${FIXED_RATE} req/s`,
      baselineTitle: 'baseline 200 at the same rate (investigation)',
      minRatio: null,
    })
  })

  await run('shell-304', async () => {
    const comparison = await compareLegs(
      env.load,
      settings,
      'shell-304',
      service(shellPath, { conditional: true, expectedStatus: 304 }),
      // The same requests, If-None-Match included: the baseline ignores it and sends its 200.
      baseline(shellPath, { conditional: true }),
      log,
    )
    return comparisonOutcome('shell-304', comparison, {
      title: 'shell 304 (If-None-Match per caller)',
      baselineTitle: 'baseline 200',
      minRatio: TARGETS.shell304Ratio,
    })
  })

  await run('apps', async () => {
    const comparison = await compareLegs(
      env.load,
      settings,
      'apps',
      service('/api/v1/apps'),
      baseline('/api/v1/apps'),
      log,
    )
    return comparisonOutcome('apps', comparison, {
      title: `apps inventory (${env.dataset.apps + 1} apps, ${env.recorded.appsBytes} B)`,
      baselineTitle: 'baseline apps (same bytes)',
      minRatio: null,
    })
  })

  await run('one-app', async () => {
    await requestForEachToken(env.probes.large, `/api/v1/shell/${SEED_APP}`, env.warmTokens)
    await requestForEachToken(env.probes.small, `/api/v1/shell/${SEED_APP}`, env.warmTokens)
    const path = `/api/v1/shell/${SEED_APP}`
    const comparison = await compareLegs(
      env.load,
      settings,
      'one-app',
      { ...service(path), label: `service, ${env.dataset.apps + 1} apps` },
      {
        ...service(path),
        label: 'service, 1 app',
        url: `${env.small.url}${path}`,
        pid: env.small.pid,
      },
      log,
    )
    return comparisonOutcome('one-app', comparison, {
      title: `shell ${SEED_APP}, one app of ${env.dataset.apps + 1}`,
      baselineTitle: `shell ${SEED_APP}, one app of 1 (seeds only)`,
      minRatio: TARGETS.oneAppRatio,
      notes: [
        'two service processes of the same build, one on the large database, one on the seeds alone; both serve the same app to the same callers, so bodies and tags are identical',
      ],
    })
  })

  await run('new-token', async () => {
    const before = await readMetrics(env.large.url)
    const comparison = await compareLegs(
      env.load,
      settings,
      'new-token',
      service(shellPath, { tokenSet: 'fresh', tokenOrder: 'shared' }),
      baseline(`/verify-only/${env.hotApp}`, { tokenSet: 'fresh-uncached', tokenOrder: 'shared' }),
      log,
    )
    const after = await readMetrics(env.large.url)
    const delta = (name: string, labels: string) =>
      sample(after, name, labels) - sample(before, name, labels)
    const served = comparison.a.requests + comparison.a.warmupRequests
    const misses = delta('shell_token_cache_total', 'result="miss"')
    const verified = delta('shell_token_verifications_total', 'result="ok"')
    return comparisonOutcome('new-token', comparison, {
      title: 'shell 200, new token every request',
      baselineTitle: 'verify-only (jose jwtVerify, local key set)',
      minRatio: TARGETS.newTokenRatio,
      notes: [
        `token cache misses during the service legs: ${misses} of ${served} responses (${((100 * misses) / served).toFixed(1)}%), ${verified} verified ok; pool of ${env.freshTokenCount} RS256 tokens cycled, larger than the 10,000-entry cache`,
      ],
      extra: { cacheMisses: misses, verifiedOk: verified, responses: served },
    })
  })

  await run('new-token-body', async () => {
    const comparison = await compareLegs(
      env.load,
      settings,
      'new-token-body',
      service(shellPath, { tokenSet: 'fresh', tokenOrder: 'shared' }),
      baseline(`/verify-then-shell/${env.hotApp}`, {
        tokenSet: 'fresh-uncached',
        tokenOrder: 'shared',
      }),
      log,
    )
    return comparisonOutcome('new-token-body', comparison, {
      title: 'shell 200, new token every request',
      baselineTitle: 'verify, then the same shell bytes (investigation)',
      minRatio: null,
    })
  })

  await run('new-token-heap', async () => {
    const path = `/api/v1/shell/${SEED_APP}`
    const comparison = await compareLegs(
      env.load,
      settings,
      'new-token-heap',
      { ...service(path, { tokenSet: 'fresh', tokenOrder: 'shared' }), label: 'large' },
      {
        // A cursor of its own: each service then only meets tokens it has not cached.
        ...service(path, { tokenSet: 'fresh-uncached', tokenOrder: 'shared' }),
        label: 'small',
        url: `${env.small.url}${path}`,
        pid: env.small.pid,
      },
      log,
    )
    return comparisonOutcome('new-token-heap', comparison, {
      title: `shell ${SEED_APP}, new token every request, ${env.dataset.apps + 1} apps`,
      baselineTitle: `the same on the seeds alone (investigation)`,
      minRatio: null,
    })
  })

  await run('refresh', () => runRefreshScenario(env, settings, log))

  await run('snapshot', () => runSnapshotScenario(env, memory, log))

  return outcomes
}
