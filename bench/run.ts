/**
 * `npm run bench` (after `npm run build`): sets up what environment.ts
 * describes, runs the scenarios of scenarios.ts with wrk and prints the
 * results table. Everything it starts is
 * stopped at the end, on failure and on Ctrl-C.
 */
import { cpus, loadavg } from 'node:os'
import pino from 'pino'
import { createReleasers } from '../src/releasers.js'
import { compareLegs } from './compare-legs.js'
import { PINNING_DESCRIPTION } from './cpu-pinning.js'
import { setUpEnvironment } from './environment.js'
import { formatTable } from './format-table.js'
import { createLoadGenerator } from './load-generator.js'
import type { ScenarioContext, ScenarioResult } from './scenario.js'
import { SCENARIOS } from './scenarios.js'
import { readBenchSettings } from './settings.js'

const clock = performance.now()
const log = (line: string) => {
  const seconds = ((performance.now() - clock) / 1000).toFixed(1).padStart(6)
  process.stderr.write(`[bench ${seconds}s] ${line}\n`)
}
const settings = readBenchSettings()
const ids = SCENARIOS.map((scenario) => scenario.id)
const unknown = settings.only?.filter((id) => !ids.includes(id)) ?? []
if (unknown.length > 0) {
  process.stderr.write(`BENCH_ONLY: no scenario ${unknown.join(', ')}; one of ${ids.join(', ')}\n`)
  process.exit(1)
}
const selected = SCENARIOS.filter((scenario) => settings.only?.includes(scenario.id) ?? true)
const loadAtStart = loadavg()[0] ?? Number.NaN

// The service's own releasers: stops in reverse order, each even when one before it failed.
const cleanup = createReleasers(
  pino({ level: 'error' }, { write: (line: string) => log(`cleanup: ${line.trim()}`) }),
)
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130)
    interrupted = true
    log(`${signal}: stopping everything the benchmark started (again to force)`)
    void cleanup.releaseAll().then(() => process.exit(130))
  })
}

let exitCode = 0
try {
  const load = createLoadGenerator(settings.connections)
  cleanup.add('load generator', () => load.close())
  log(`load generator: ${load.description}`)
  log(
    `scenarios: ${selected.map((scenario) => scenario.id).join(', ')}; ${settings.pairs} pairs of ${settings.durationS} s legs, each side warmed up ${settings.warmupS} s first`,
  )
  const env = await setUpEnvironment(settings, cleanup, log)
  const context: ScenarioContext = {
    env,
    settings,
    load,
    log,
    compare: (a, b, minRatio) => compareLegs({ settings, load, log }, a, b, minRatio),
  }
  const results: (ScenarioResult & { id: string })[] = []
  for (const scenario of selected) {
    log(`— ${scenario.id}`)
    try {
      results.push({ id: scenario.id, ...(await scenario.run(context)) })
    } catch (error) {
      // One broken scenario should not cost the figures of the others.
      if (interrupted) throw error
      const rows = [{ scenario: `${scenario.id} failed`, result: 'miss' as const }]
      results.push({ id: scenario.id, rows, notes: [String(error)] })
    }
  }
  // The servers write their CPU profiles as they exit.
  if (env.profileDir !== null) await cleanup.releaseAll()
  const command = [
    ...Object.entries(process.env)
      .filter(([name]) => name.startsWith('BENCH_'))
      .map(([name, value]) => `${name}=${value}`),
    'npm run bench',
  ].join(' ')
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`
  const lines = [
    formatTable(results.flatMap((result) => result.rows)),
    '',
    ...results.flatMap(({ id, notes }) => notes.map((note) => `- ${id}: ${note}`)),
    '',
    `${command}: ${((performance.now() - clock) / 1000).toFixed(0)} s on ${machine}`,
    `load generator: ${load.description}; ${PINNING_DESCRIPTION}`,
    `load average (1 min): ${loadAtStart.toFixed(2)} at the start, ${(loadavg()[0] ?? Number.NaN).toFixed(2)} at the end`,
  ]
  if (env.profileDir !== null) {
    lines.push(`CPU profiles: ${env.profileDir} (open them in Chrome DevTools or speedscope.app)`)
  }
  process.stdout.write(`\n${lines.join('\n')}\n`)
} catch (error) {
  exitCode = 1
  // After Ctrl-C the children are gone and whatever was waiting on them fails; that is no news.
  if (!interrupted)
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
} finally {
  await cleanup.releaseAll()
}
process.exit(exitCode)
