import { randomBytes } from 'node:crypto'
import { connectDatabase, type Sql } from '../../src/db/connect.js'
import postgres from '../../src/db/postgres-driver.js'

/** Name of the database that holds the migrated schema; test/run.ts builds it once. */
export const TEMPLATE_DATABASE = 'shell_test_template'

export interface TestDatabase {
  readonly url: string
  readonly name: string
  /** A pool on the test database, closed at teardown. */
  readonly sql: Sql
  /** The server's admin connection string, for tests that need a second database or pg_terminate_backend. */
  readonly adminUrl: string
}

interface Teardown {
  teardown(fn: () => unknown): void
}

function requireAdminUrl(): string {
  const url = process.env.SHELL_TEST_ADMIN_URL
  if (!url) {
    throw new Error(
      'no test PostgreSQL: run tests through `npm test` or `node --import tsx test/run.ts [files]`',
    )
  }
  return url
}

/** Swaps the database of a connection string. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/**
 * A database of the test's own, cloned from the migrated template
 * (CREATE DATABASE ... TEMPLATE is a file copy: far faster than migrating),
 * dropped at teardown.
 */
export async function createTestDatabase(
  t: Teardown,
  options: { template?: string } = {},
): Promise<TestDatabase> {
  const adminUrl = requireAdminUrl()
  const name = `shell_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(
      `create database "${name}" template "${options.template ?? TEMPLATE_DATABASE}"`,
    )
  } finally {
    await admin.end()
  }
  const url = withDatabase(adminUrl, name)
  const sql = connectDatabase(url, { max: 4, applicationName: 'shell-data-test' })
  t.teardown(async () => {
    await sql.end({ timeout: 5 })
    await dropDatabase(adminUrl, name)
  })
  return { url, name, sql, adminUrl }
}

/** An empty database with no schema at all, for migration tests. */
export async function createEmptyDatabase(t: Teardown): Promise<TestDatabase> {
  return createTestDatabase(t, { template: 'template0' })
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
  } finally {
    await admin.end()
  }
}
