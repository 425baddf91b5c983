/**
 * `npm test`: finds a PostgreSQL (TEST_DATABASE_URL, testcontainers, embedded), builds the
 * migrated template database once, runs tap with it, and stops everything it
 * started. Arguments are passed to tap, e.g. `node --import tsx test/run.ts test/db`.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { migrateDatabase } from '../src/db/migrate.js'
import postgres from '../src/db/postgres-driver.js'
import { EmbeddedPostgresError } from '../src/embedded/embedded.js'
import { TEMPLATE_DATABASE, withDatabase } from './helpers/database.js'
import { startTestPostgres } from './helpers/test-postgres.js'

buildClientModulesWhenStale()
const server = await startTestPostgres().catch((error: unknown) => {
  // The message says what failed and what to do; a stack trace would only bury it.
  if (!(error instanceof EmbeddedPostgresError)) throw error
  process.stderr.write(`test PostgreSQL: ${error.message}\n`)
  process.exit(1)
})
process.stdout.write(`# test PostgreSQL: ${server.source}\n`)
let exitCode = 1
try {
  await buildTemplate(server.adminUrl)
  exitCode = await runTap(process.argv.slice(2), server.adminUrl)
} finally {
  await server.stop()
}
process.exit(exitCode)

/**
 * Every instance serves dist/client/served (routes/client-modules.ts), also
 * when the tests run it from src/ under tsx, and the package's copies are
 * dist/client's: built again when a source is newer, so a test never runs
 * yesterday's module.
 */
function buildClientModulesWhenStale(): void {
  const mtimes = (dir: string) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => statSync(`${dir}/${entry.name}`).mtimeMs)
  const newest = (dir: string) => Math.max(0, ...mtimes(dir))
  let built = 0
  try {
    const builds = [...mtimes('dist/client'), ...mtimes('dist/client/served')]
    if (builds.length > 0) built = Math.min(...builds)
  } catch {}
  if (built > newest('src/client')) return
  const build = spawnSync('npm', ['run', '--silent', 'build:client'], { stdio: 'inherit' })
  if (build.status !== 0) process.exit(1)
}

async function buildTemplate(adminUrl: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`drop database if exists "${TEMPLATE_DATABASE}" with (force)`)
    await admin.unsafe(`create database "${TEMPLATE_DATABASE}"`)
  } finally {
    await admin.end()
  }
  const template = postgres(withDatabase(adminUrl, TEMPLATE_DATABASE), {
    max: 1,
    onnotice: () => {},
  })
  try {
    await migrateDatabase(template)
  } finally {
    await template.end()
  }
}

function runTap(args: string[], adminUrl: string): Promise<number> {
  return new Promise((resolve) => {
    const tap = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...args], {
      stdio: 'inherit',
      env: { ...process.env, SHELL_TEST_ADMIN_URL: adminUrl },
    })
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => tap.kill(signal))
    }
    tap.on('close', (code) => resolve(code ?? 1))
  })
}
