/**
 * For .ci/run: the suite's PostgreSQL (test/helpers/test-postgres.ts) with a
 * fresh, empty database; prints its connection string on one line, then
 * keeps the server until its standard input closes.
 */
import postgres from '../../src/db/postgres-driver.js'
import { withDatabase } from './database.js'
import { startTestPostgres } from './test-postgres.js'

const DATABASE = 'shell_ci_production_set'
const server = await startTestPostgres()
try {
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`)
  await admin.unsafe(`create database "${DATABASE}"`)
  await admin.end()
  process.stdout.write(`${withDatabase(server.adminUrl, DATABASE)}\n`)
  process.stdin.resume()
  await new Promise((resolve) => process.stdin.once('end', resolve))
} finally {
  await server.stop()
}
