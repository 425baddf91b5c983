import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Sql } from './connect.js'

/** Numbered migration files: `001_schema.sql`, `002_...sql`; applied in name order. */
const MIGRATION_FILE = /^\d{3,}_[a-z0-9_-]+\.sql$/

/** Shared by all instances, so that those starting together take turns; "shell" in ASCII. */
const MIGRATION_LOCK_KEY = 0x7368656c6c

export class MigrationError extends Error {
  override name = 'MigrationError'
}

export interface MigrationFile {
  readonly name: string
  readonly sql: string
  readonly checksum: string
}

export const MIGRATIONS_DIR = new URL('../../sql/', import.meta.url)

export async function readMigrationFiles(
  dir: string | URL = MIGRATIONS_DIR,
): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((name) => MIGRATION_FILE.test(name)).sort()
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir instanceof URL ? dir.pathname : dir, name), 'utf8')
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') }
    }),
  )
}

/** Applies pending migrations, each in a locked transaction; refuses applied ones edited since. */
export async function migrateDatabase(
  sql: Sql,
  options: { logger?: Logger; dir?: string | URL } = {},
): Promise<{ readonly applied: readonly string[]; readonly alreadyApplied: readonly string[] }> {
  const files = await readMigrationFiles(options.dir)
  const applied: string[] = []
  const alreadyApplied: string[] = []
  for (const file of files) {
    const outcome = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`
      await tx.unsafe(`
        create schema if not exists shell;
        create table if not exists shell.schema_migrations (
          name       text primary key,
          checksum   text not null,
          applied_at timestamptz not null default now()
        )`)
      const [record] = await tx<{ checksum: string }[]>`
        select checksum from shell.schema_migrations where name = ${file.name}`
      if (record !== undefined) {
        assertUnedited(file, record.checksum)
        return 'already-applied' as const
      }
      await tx.unsafe(file.sql)
      await tx`insert into shell.schema_migrations (name, checksum) values (${file.name}, ${file.checksum})`
      return 'applied' as const
    })
    if (outcome === 'applied') {
      applied.push(file.name)
      options.logger?.info({ migration: file.name }, 'migration applied')
    } else {
      alreadyApplied.push(file.name)
    }
  }
  return { applied, alreadyApplied }
}

/**
 * The migration files a database has not applied, in order, without writing to it (a hot
 * standby, which replays the primary's). An applied file edited since throws there too.
 */
export async function findUnappliedMigrations(
  sql: Sql,
  options: { dir?: string | URL } = {},
): Promise<string[]> {
  const files = await readMigrationFiles(options.dir)
  const [table] = await sql<{ exists: boolean }[]>`
    select to_regclass('shell.schema_migrations') is not null as exists`
  if (table?.exists !== true) return files.map((file) => file.name)
  const rows = await sql<{ name: string; checksum: string }[]>`
    select name, checksum from shell.schema_migrations`
  const applied = new Map(rows.map((row) => [row.name, row.checksum]))
  const unapplied: string[] = []
  for (const file of files) {
    const checksum = applied.get(file.name)
    if (checksum === undefined) unapplied.push(file.name)
    else assertUnedited(file, checksum)
  }
  return unapplied
}

function assertUnedited(file: MigrationFile, appliedChecksum: string): void {
  if (appliedChecksum === file.checksum) return
  throw new MigrationError(
    `migration ${file.name} was edited after it was applied (checksum ${appliedChecksum.slice(0, 12)} in the database, ${file.checksum.slice(0, 12)} on disk); add a new migration instead of editing an applied one`,
  )
}
