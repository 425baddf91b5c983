/**
 * `npm run bench`: builds (npm script), then starts an embedded PostgreSQL,
 * the data sets, an identity provider, two service processes, a baseline and
 * a load generator; runs the scenarios of bench/README.md; prints the table
 * and writes bench/results/latest.json plus a timestamped copy. Everything
 * it starts is stopped at the end, on failure and on Ctrl-C.
 */
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { createReleasers } from '../src/releasers.js'
import { setUpEnvironment } from './environment.js'
import { TARGETS } from './outcome.js'
import { summarizeProfile } from './profile-summary.js'
import { collectRows, describeMachine, formatTable, writeResults } from './report.js'
import { runScenarios } from './scenarios.js'
import { readBenchSettings } from './settings.js'

const startedAt = new Date()
const clock = performance.now()
const log = (line: string) => {
  const seconds = ((performance.now() - clock) / 1000).toFixed(1).padStart(6)
  process.stderr.write(`[bench ${seconds}s] ${line}\n`)
}

const settings = readBenchSettings()
// The service's own releasers: stops in reverse order, each even when one before it failed.
// Only failures are logged, as one line of the benchmark's log each.
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
  log(
    `settings: ${settings.durationS} s legs after ${settings.warmupS} s warm-up, ${settings.connections} connections, ${settings.pairs} pairs, load generator ${settings.loadgen}, scenarios ${[...settings.only].join(',')}`,
  )
  const env = await setUpEnvironment(settings, cleanup, log)
  const outcomes = await runScenarios(env, settings, log)
  const rows = collectRows(outcomes)
  const table = formatTable(rows)
  const command = commandLine()
  const machine = describeMachine()
  process.stdout.write(`\n${table}\n\n`)
  for (const outcome of outcomes)
    for (const note of outcome.notes) process.stdout.write(`- ${outcome.id}: ${note}\n`)
  const durationS = Math.round((performance.now() - clock) / 100) / 10
  const paths = await writeResults({
    startedAt: startedAt.toISOString(),
    durationS,
    command,
    machine,
    settings: { ...settings, only: [...settings.only] },
    targets: TARGETS,
    dataset: {
      ...env.dataset,
      seedApps: 1,
      warmCallers: env.warmTokens.length,
      freshTokens: env.freshTokenCount,
    },
    recorded: env.recorded,
    startupMs: env.startupMs,
    identityProvider: env.issuer.requests,
    table,
    rows,
    scenarios: Object.fromEntries(
      outcomes.map((outcome) => [outcome.id, { notes: outcome.notes, detail: outcome.detail }]),
    ),
  })
  process.stdout.write(
    `\n${command} on ${machine.cpus} × ${machine.cpuModel}, node ${machine.node}; ${durationS} s in all\nresults: ${paths.join(', ')}\n`,
  )
  if (env.profileDir !== null) {
    // The profiles are written when the processes exit.
    await cleanup.releaseAll()
    await printProfiles(env.profileDir)
  }
} catch (error) {
  exitCode = 1
  // After Ctrl-C the children are gone and whatever was waiting on them fails; that is no news.
  if (!interrupted)
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
} finally {
  await cleanup.releaseAll()
}
process.exit(exitCode)

async function printProfiles(dir: string): Promise<void> {
  const files = (await readdir(dir, { recursive: true }))
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
  const summaries: string[] = []
  for (const file of files) summaries.push(await summarizeProfile(join(dir, file)))
  const text = summaries.join('\n\n')
  await writeFile(join(dir, 'summary.txt'), `${text}\n`)
  process.stdout.write(`\n${text}\n\nprofiles and summary.txt in ${dir}\n`)
}

function commandLine(): string {
  const variables = Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .map(([name, value]) => `${name}=${value}`)
  return [...variables, 'npm run bench'].join(' ')
}
