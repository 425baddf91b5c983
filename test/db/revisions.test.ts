import t from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { readSnapshotRows } from '../../src/db/read-snapshot-rows.js'
import { createTestDatabase } from '../helpers/database.js'

const db = await createTestDatabase(t)
const sql = db.sql

await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
const [crmItem] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'sidebar', 'A') returning id`
const [hrItem] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('hr', 'a', 'sidebar', 'A') returning id`
const crmItemId = crmItem?.id ?? ''
const hrItemId = hrItem?.id ?? ''

async function revisions(): Promise<Map<string, string>> {
  const rows = await sql<{ app_key: string; revision: string }[]>`
    select app_key, revision::text from shell.app_revisions`
  return new Map(rows.map((row) => [row.app_key, row.revision]))
}

const changes: Array<[string, (sql: postgres.Sql) => Promise<unknown>]> = [
  ['update of the app', (sql) => sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`],
  ['insert of branding', (sql) => sql`insert into shell.branding (app_key) values ('crm')`],
  [
    'update of branding',
    (sql) => sql`update shell.branding set footer_text = 'f' where app_key = 'crm'`,
  ],
  ['delete of branding', (sql) => sql`delete from shell.branding where app_key = 'crm'`],
  [
    'insert of an item',
    (sql) =>
      sql`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'b', 'footer', 'B')`,
  ],
  [
    'update of an item',
    (sql) => sql`update shell.menu_items set label = 'B2' where app_key = 'crm' and item_key = 'b'`,
  ],
  [
    'delete of an item',
    (sql) => sql`delete from shell.menu_items where app_key = 'crm' and item_key = 'b'`,
  ],
  [
    'insert of a grant',
    (sql) =>
      sql`insert into shell.menu_role_grants (menu_item_id, role) values (${crmItemId}, 'r')`,
  ],
  [
    'update of a grant',
    (sql) => sql`update shell.menu_role_grants set role = 's' where menu_item_id = ${crmItemId}`,
  ],
  [
    'delete of a grant',
    (sql) => sql`delete from shell.menu_role_grants where menu_item_id = ${crmItemId}`,
  ],
  [
    'update of the default locale',
    (sql) => sql`update shell.apps set default_locale = 'de' where app_key = 'crm'`,
  ],
  [
    'insert of a label',
    (sql) =>
      sql`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${crmItemId}, 'fr', 'A')`,
  ],
  [
    'update of a label',
    (sql) => sql`update shell.menu_item_labels set label = 'A2' where menu_item_id = ${crmItemId}`,
  ],
  [
    'delete of a label',
    (sql) => sql`delete from shell.menu_item_labels where menu_item_id = ${crmItemId}`,
  ],
]

for (const [name, change] of changes) {
  t.test(`${name} moves that app's revision and no other`, async (t) => {
    const before = await revisions()
    await change(sql)
    const after = await revisions()
    t.not(after.get('crm'), before.get('crm'), 'crm moved')
    t.equal(after.get('hr'), before.get('hr'), 'hr did not')
  })
}

t.test('a rolled-back change moves nothing', async (t) => {
  const before = await revisions()
  await sql
    .begin(async (tx) => {
      await tx`update shell.apps set name = 'never' where app_key = 'crm'`
      throw new Error('rollback')
    })
    .catch(() => {})
  t.same(await revisions(), before)
})

t.test('a transaction writing many rows of an app moves its revision row once', async (t) => {
  const before = await revisions()
  const updates = await sql.begin(async (tx) => {
    // The backend's counts not yet reported: they grow with this transaction's updates.
    const counted = async () =>
      (
        await tx<{ updates: number }[]>`
          select pg_stat_get_xact_tuples_updated('shell.app_revisions'::regclass)::int as updates`
      )[0]?.updates ?? Number.NaN
    const countedBefore = await counted()
    await tx`update shell.apps set name = 'CRM 3' where app_key = 'crm'`
    await tx`
      insert into shell.menu_items (app_key, item_key, zone, label)
      values ('crm', 'x1', 'footer', 'X1'), ('crm', 'x2', 'footer', 'X2'), ('crm', 'x3', 'footer', 'X3')`
    await tx`insert into shell.menu_role_grants (menu_item_id, role) values (${crmItemId}, 'many')`
    await tx`delete from shell.menu_items where app_key = 'crm' and item_key like 'x%'`
    await tx`delete from shell.menu_role_grants where role = 'many'`
    return (await counted()) - countedBefore
  })
  // One row version, not one per row written: an import of a large app left hundreds of dead
  // versions behind, and every reload scans this table.
  t.equal(updates, 1, 'nine rows written, one update of the revision row')
  const after = await revisions()
  t.not(after.get('crm'), before.get('crm'), 'crm moved')
  t.equal(after.get('hr'), before.get('hr'), 'hr did not')
  await sql`update shell.apps set name = 'CRM' where app_key = 'crm'`
  t.not((await revisions()).get('crm'), after.get('crm'), 'the next transaction moves it again')
})

t.test(
  "an incremental read returns every app's revision but only the moved apps' rows",
  async (t) => {
    const first = await readSnapshotRows(sql)
    t.same(first.unchangedApps, new Set(), 'a read without known revisions reads everything')
    t.equal(first.rows.menuItems.length, 2)
    const unchanged = await readSnapshotRows(sql, first.revisions)
    t.same(unchanged.unchangedApps, new Set(['crm', 'hr']))
    t.same(unchanged.rows.menuItems, [])
    t.same(unchanged.rows.apps, [], 'not even the app rows')
    t.same([...unchanged.revisions.keys()].sort(), ['crm', 'hr'], 'but every revision')
    await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${hrItemId}, 'hr-admin')`
    const moved = await readSnapshotRows(sql, first.revisions)
    t.same(moved.unchangedApps, new Set(['crm']))
    t.same(
      moved.rows.apps.map((app) => app.appKey),
      ['hr'],
    )
    t.same(
      moved.rows.menuItems.map((item) => item.appKey),
      ['hr'],
    )
    t.same(moved.rows.grants, [{ menuItemId: hrItemId, role: 'hr-admin' }])
  },
)

t.test('a read of moved apps gives the same rows, value for value, as a full read', async (t) => {
  await sql`insert into shell.branding (app_key, theme, primary_color) values ('crm', '{"a":[1,{"b":null}]}', '#0b5fff')`
  await sql`
    insert into shell.menu_items (app_key, item_key, zone, label, parent_id, position, kind, external, href)
    values ('crm', 'child', 'sidebar', 'Child', ${crmItemId}, 3, 'action', true, '/x')`
  await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${crmItemId}, 'crm-x')`
  await sql`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${crmItemId}, 'de-CH', 'Ä')`
  await sql`update shell.apps set default_locale = 'fr', description = 'd' where app_key = 'crm'`
  const full = await readSnapshotRows(sql)
  const stale = new Map([...full.revisions].map(([key]) => [key, '0']))
  const moved = await readSnapshotRows(sql, stale)
  const byKey = (rows: readonly object[]) => rows.map((row) => JSON.stringify(row)).sort()
  for (const table of ['apps', 'branding', 'menuItems', 'grants', 'labels'] as const) {
    t.same(byKey(moved.rows[table]), byKey(full.rows[table]), table)
  }
  t.same(moved.revisions, full.revisions)
  t.same(moved.unchangedApps, new Set())
  const item = moved.rows.menuItems.find((row) => row.itemKey === 'child')
  t.equal(typeof item?.id, 'string', 'ids as decimal strings')
  t.equal(typeof item?.parentId, 'string')
  t.equal(item?.position, 3)
  t.equal(item?.external, true)
})

t.test(
  'deleting an app with branding, items and grants works, and a new app gets a revision',
  async (t) => {
    await sql`insert into shell.branding (app_key) values ('hr')`
    await sql`delete from shell.apps where app_key = 'hr'`
    await sql`insert into shell.apps (app_key, name) values ('new', 'New')`
    const read = await readSnapshotRows(sql)
    t.same(read.rows.apps.map((app) => app.appKey).sort(), ['crm', 'new'])
    t.ok(read.revisions.has('new'))
  },
)

t.test('an incremental read drops a removed app and reads an added one', async (t) => {
  await sql`insert into shell.apps (app_key, name) values ('gone', 'Gone')`
  const known = (await readSnapshotRows(sql)).revisions
  await sql`delete from shell.apps where app_key = 'gone'`
  await sql`insert into shell.apps (app_key, name) values ('added', 'Added')`
  const read = await readSnapshotRows(sql, known)
  const full = await readSnapshotRows(sql)
  t.same(read.revisions, full.revisions, 'the revisions a full read gives')
  t.notOk(read.revisions.has('gone'))
  t.same(
    read.rows.apps.map((app) => app.appKey),
    ['added'],
    'only the added app is read',
  )
  t.same([...read.unchangedApps].sort(), [...known.keys()].filter((key) => key !== 'gone').sort())
})

t.test('an app without a revision row is read whole every time, and never known', async (t) => {
  await sql`delete from shell.app_revisions where app_key = 'crm'`
  const first = await readSnapshotRows(sql)
  t.notOk(first.revisions.has('crm'))
  const again = await readSnapshotRows(sql, first.revisions)
  t.same(
    again.rows.apps.map((app) => app.appKey),
    ['crm'],
  )
  t.notOk(again.unchangedApps.has('crm'))
  t.notOk(again.revisions.has('crm'))
  await sql`update shell.apps set name = 'CRM' where app_key = 'crm'`
  t.ok((await readSnapshotRows(sql)).revisions.has('crm'), 'the next change gives it one again')
})

t.test('TRUNCATE moves every revision', async (t) => {
  const before = await revisions()
  await sql`truncate shell.menu_role_grants`
  const after = await revisions()
  for (const [appKey, revision] of before) t.not(after.get(appKey), revision, appKey)
})

t.test('the incremental read is one statement without parameters: one flight', async (t) => {
  const known = (await readSnapshotRows(sql)).revisions
  await sql`update shell.apps set name = 'CRM flight' where app_key = 'crm'`
  const statements: { text: string; parameters: number }[] = []
  // The service's settings, plus postgres.js's debug hook, which sees every statement built.
  const traced = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: () => {},
    debug: (_connection, text, parameters) =>
      statements.push({ text, parameters: parameters.length }),
  })
  t.teardown(() => traced.end())
  const read = await readSnapshotRows(traced, known)
  t.same(
    read.rows.apps.map((app) => app.appKey),
    ['crm'],
  )
  // The connection's own first statement (postgres.js looks up array types) is not the read's.
  const reads = statements.filter((statement) => statement.text.includes('shell.app_revisions'))
  t.equal(reads.length, 1, 'one statement')
  // With parameters and prepare: false, postgres.js waits for the server to describe them.
  t.equal(reads[0]?.parameters, 0, 'no parameters, so Parse to Sync go out together')
})

t.test('known app keys travel into the statement exactly, whatever they hold', async (t) => {
  const known = new Map((await readSnapshotRows(sql)).revisions)
  const hostile = [
    "o'brien",
    "x'); drop table shell.apps; --",
    'back\\slash',
    '$$dollar$$',
    '"quoted"',
    '{brace,comma}',
    'Ünïcödé ✓',
    '__proto__',
  ]
  for (const appKey of hostile) known.set(appKey, '1')
  const read = await readSnapshotRows(sql, known)
  for (const appKey of hostile) {
    t.notOk(read.revisions.has(appKey), `${appKey}: seen as removed`)
    t.notOk(read.unchangedApps.has(appKey), `${appKey}: not taken as unchanged`)
  }
  t.same(
    [...read.unchangedApps].sort(),
    [...known.keys()].filter((key) => !hostile.includes(key)).sort(),
    'the real apps are unchanged',
  )
  const [count] = await sql<{ apps: number }[]>`select count(*)::int as apps from shell.apps`
  t.ok((count?.apps ?? 0) > 0, 'shell.apps is still there')
})
