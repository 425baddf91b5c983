/**
 * MIGRATE=auto's start: a database that takes writes is migrated; one that
 * does not (here `default_transaction_read_only`, as a hot standby is in
 * test/db/standby-migrations.test.ts) is only checked, and a missing
 * migration is a reason to wait, never a write; an edited applied file stops
 * the start there too.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { connectDatabase, type Sql } from '../../src/db/connect.js'
import {
  findUnappliedMigrations,
  MIGRATIONS_DIR,
  migrateDatabase,
  readMigrationFiles,
} from '../../src/db/migrate.js'
import { prepareSchema } from '../../src/db/prepare-schema.js'
import { createEmptyDatabase, type TestDatabase } from '../helpers/database.js'

const silent = pino({ level: 'silent' })
const names = (await readMigrationFiles()).map((file) => file.name)

/** A pool on the database whose sessions refuse writes, as a standby's do. */
async function readOnlyPool(t: Test, db: TestDatabase): Promise<Sql> {
  await db.sql.unsafe(`alter database "${db.name}" set default_transaction_read_only = on`)
  const sql = connectDatabase(db.url, { max: 1 })
  t.teardown(() => sql.end({ timeout: 1 }))
  return sql
}

const hasSchema = async (sql: Sql) =>
  (await sql<{ exists: boolean }[]>`select to_regnamespace('shell') is not null as exists`)[0]
    ?.exists

t.test('a database that takes writes is migrated', async (t) => {
  const db = await createEmptyDatabase(t)
  const reason = await prepareSchema(
    { migrations: { sql: db.sql, variable: 'DATABASE_URL' }, reads: null },
    silent,
  )
  t.equal(reason, null, 'nothing to wait for')
  t.same(await findUnappliedMigrations(db.sql), [], 'every file applied')
})

t.test('a read-only database is checked, never written to', async (t) => {
  const db = await createEmptyDatabase(t)
  const readOnly = await readOnlyPool(t, db)
  const targets = { migrations: { sql: readOnly, variable: 'DATABASE_URL' as const }, reads: null }
  const reason = await prepareSchema(targets, silent)
  t.equal(
    reason,
    `migrations not applied: ${names.join(', ')}; DATABASE_URL is read-only (default_transaction_read_only is on), where they cannot be applied: apply them on the primary (shell-data migrate, or an instance whose FEED_DATABASE_URL names it)`,
    'the reason names every migration, and why',
  )
  t.equal(await hasSchema(db.sql), false, 'no schema was made')

  // Applied by a session that may write, as the primary's would be replayed.
  const writer = connectDatabase(db.url, {
    max: 1,
    applicationName: 'test-writer',
  })
  t.teardown(() => writer.end({ timeout: 1 }))
  await writer`set default_transaction_read_only = off`
  await migrateDatabase(writer)
  t.equal(await prepareSchema(targets, silent), null, 'every migration there: nothing to wait for')
})

t.test('a read database that lacks what the migrations database has is waited for', async (t) => {
  const primary = await createEmptyDatabase(t)
  const standby = await createEmptyDatabase(t)
  const reason = await prepareSchema(
    {
      migrations: { sql: primary.sql, variable: 'FEED_DATABASE_URL' },
      reads: { sql: standby.sql, variable: 'DATABASE_URL' },
    },
    silent,
  )
  t.match(reason, `migrations not applied in DATABASE_URL: ${names.join(', ')}`)
  t.same(await findUnappliedMigrations(primary.sql), [], 'the migrations database is migrated')
  t.equal(await hasSchema(standby.sql), false, 'the read database is not written to')
})

t.test('an applied file edited since stops the start on a read-only database too', async (t) => {
  const db = await createEmptyDatabase(t)
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cp(MIGRATIONS_DIR.pathname, dir, { recursive: true })
  await migrateDatabase(db.sql, { dir })
  const readOnly = await readOnlyPool(t, db)
  t.same(await findUnappliedMigrations(readOnly, { dir }), [], 'as applied')
  await writeFile(join(dir, '999_later.sql'), 'select 1;\n')
  t.same(await findUnappliedMigrations(readOnly, { dir }), ['999_later.sql'], 'a new file')
  const edited = join(dir, '001_schema.sql')
  await writeFile(edited, `${await readFile(edited, 'utf8')}\n-- an innocent edit\n`)
  await t.rejects(findUnappliedMigrations(readOnly, { dir }), {
    name: 'MigrationError',
    message: /001_schema\.sql was edited after it was applied/,
  })
})
