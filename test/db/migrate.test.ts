import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import {
  MIGRATIONS_DIR,
  MigrationError,
  migrateDatabase,
  readMigrationFiles,
} from '../../src/db/migrate.js'
import { createEmptyDatabase } from '../helpers/database.js'

t.test('an empty database gets every migration once, recorded with its checksum', async (t) => {
  const db = await createEmptyDatabase(t)
  const files = await readMigrationFiles()
  t.ok(files.length >= 1)
  const first = await migrateDatabase(db.sql)
  t.same(
    first.applied,
    files.map((file) => file.name),
  )
  const rows = await db.sql<{ name: string; checksum: string }[]>`
    select name, checksum from shell.schema_migrations order by name`
  t.same(
    rows.map((row) => [row.name, row.checksum]),
    files.map((file) => [file.name, file.checksum]),
  )
  const second = await migrateDatabase(db.sql)
  t.same(second.applied, [])
  t.same(
    second.alreadyApplied,
    files.map((file) => file.name),
  )
})

t.test('two runners at once both succeed and apply each file once', async (t) => {
  const db = await createEmptyDatabase(t)
  const other = connectDatabase(db.url, { max: 2 })
  t.teardown(() => other.end())
  const results = await Promise.all([migrateDatabase(db.sql), migrateDatabase(other)])
  const files = await readMigrationFiles()
  const appliedByEither = [...results[0].applied, ...results[1].applied].sort()
  t.same(
    appliedByEither,
    files.map((file) => file.name),
    'each file applied by exactly one runner',
  )
  const [row] = await db.sql<
    { count: number }[]
  >`select count(*)::int as count from shell.schema_migrations`
  t.equal(row?.count, files.length)
})

t.test('an applied file that was edited stops the run, naming the file', async (t) => {
  const db = await createEmptyDatabase(t)
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cp(MIGRATIONS_DIR.pathname, dir, { recursive: true })
  await migrateDatabase(db.sql, { dir })
  const edited = join(dir, '001_schema.sql')
  await writeFile(edited, `${await readFile(edited, 'utf8')}\n-- an innocent edit\n`)
  await t.rejects(migrateDatabase(db.sql, { dir }), {
    name: 'MigrationError',
    message: /001_schema\.sql was edited/,
  })
  t.ok(MigrationError)
})

t.test('a failing migration leaves nothing of itself behind', async (t) => {
  const db = await createEmptyDatabase(t)
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cp(MIGRATIONS_DIR.pathname, dir, { recursive: true })
  await writeFile(
    join(dir, '999_broken.sql'),
    'create table shell.half_done (x int);\nselect 1/0;\n',
  )
  await t.rejects(migrateDatabase(db.sql, { dir }), { code: '22012' })
  const [row] = await db.sql<{ exists: boolean }[]>`
    select to_regclass('shell.half_done') is not null as exists`
  t.equal(row?.exists, false, 'the broken file was rolled back')
  const names = await db.sql<{ name: string }[]>`select name from shell.schema_migrations`
  t.notOk(names.some((row) => row.name === '999_broken.sql'))
})

t.test('a database of the previous version migrates to labels with no row lost', async (t) => {
  const db = await createEmptyDatabase(t)
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const files = await readMigrationFiles()
  const beforeLabels = files.filter((file) => file.name < '003')
  for (const file of beforeLabels) await writeFile(join(dir, file.name), file.sql)
  await migrateDatabase(db.sql, { dir })
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
  await db.sql`
    insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'sidebar', 'A')`
  const dump = () => db.sql`
    select a.app_key, a.name, m.item_key, m.label from shell.apps a join shell.menu_items m using (app_key)`
  const before = await dump()

  const result = await migrateDatabase(db.sql)
  t.same(result.applied, [
    '003_locales.sql',
    '004_one_revision_per_transaction.sql',
    '005_change_xids.sql',
    '006_audiences.sql',
    '007_dataset.sql',
    '008_revision_ids.sql',
    '009_link_schemes.sql',
  ])
  t.same(await dump(), before, 'every row as it was')
  const [app] = await db.sql`select default_locale from shell.apps where app_key = 'crm'`
  t.equal(app?.default_locale, 'en', 'existing apps speak English by default')
  const [labels] = await db.sql`select count(*)::int as count from shell.menu_item_labels`
  t.equal(labels?.count, 0)
})

t.test('links stored before the check lose their link, and only those', async (t) => {
  const db = await createEmptyDatabase(t)
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const files = await readMigrationFiles()
  for (const file of files.filter((file) => file.name < '009')) {
    await writeFile(join(dir, file.name), file.sql)
  }
  await migrateDatabase(db.sql, { dir })
  await db.sql`
    insert into shell.apps (app_key, name, home_url) values
      ('bad', 'Bad', ${' JavaScript:alert(1)'}), ('good', 'Good', 'https://example.com/good')`
  await db.sql`
    insert into shell.branding (app_key, logo_url, favicon_url) values
      ('bad', ${'java\tscript:alert(1)'}, '/favicon.ico'), ('good', '/logo.svg', 'data:image/png,x')`
  await db.sql`
    insert into shell.menu_items (app_key, item_key, zone, label, href) values
      ('bad', 'evil', 'sidebar', 'Evil', 'vbscript:msgbox(1)'),
      ('bad', 'fine', 'sidebar', 'Fine', '/bad/fine'),
      ('good', 'home', 'sidebar', 'Home', 'mailto:help@example.com')`
  const revisions = () => db.sql<{ app_key: string; revision: string }[]>`
    select app_key, revision::text from shell.app_revisions order by app_key`
  const before = await revisions()

  t.same((await migrateDatabase(db.sql)).applied, ['009_link_schemes.sql'])
  t.same(
    await db.sql`
      select a.app_key, a.home_url, b.logo_url, b.favicon_url
      from shell.apps a join shell.branding b using (app_key) order by a.app_key`,
    [
      { app_key: 'bad', home_url: null, logo_url: null, favicon_url: '/favicon.ico' },
      {
        app_key: 'good',
        home_url: 'https://example.com/good',
        logo_url: '/logo.svg',
        favicon_url: null,
      },
    ],
  )
  t.same(
    await db.sql`select item_key, label, href from shell.menu_items order by item_key`,
    [
      { item_key: 'evil', label: 'Evil', href: null },
      { item_key: 'fine', label: 'Fine', href: '/bad/fine' },
      { item_key: 'home', label: 'Home', href: 'mailto:help@example.com' },
    ],
    'the item stays, without its link',
  )
  const after = await revisions()
  t.ok(
    after.every((row, index) => row.revision !== before[index]?.revision),
    'both apps changed: their revisions moved, so instances reload them',
  )
})
