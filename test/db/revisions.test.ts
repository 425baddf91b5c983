import t from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import type postgres from '../../src/db/postgres-driver.js'
import { FEW_APPS } from '../../src/db/read-few-changed-apps.js'
import { readRevisionsChangedSince } from '../../src/db/read-snapshot-rows.js'
import { createTestDatabase } from '../helpers/database.js'
import { readAllRows, readRowsChangedSince } from '../helpers/read-rows.js'

const db = await createTestDatabase(t)
const sql = db.sql

await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
const [crmItem] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'sidebar', 'A') returning id`
const [hrItem] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('hr', 'a', 'sidebar', 'A') returning id`
const crmItemId = crmItem?.id ?? ''
const hrItemId = hrItem?.id ?? ''

/** Each app's revision as the loader reads it (sql/008_revision_ids.sql). */
async function revisions(): Promise<Map<string, string>> {
  const rows = await sql<{ app_key: string; revision: string }[]>`
    select app_key, revision_id::text as revision from shell.app_revisions`
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

t.test('a read since a full read returns only the apps changed since, whole', async (t) => {
  const first = await readAllRows(sql)
  t.equal(first.complete, true)
  t.equal(first.rows.menuItems.length, 2, 'a full read reads everything')
  const nothing = await readRowsChangedSince(sql, first.watermark)
  t.same(nothing.rows.apps, [], 'nothing changed, nothing read')
  t.same(nothing.rows.menuItems, [])
  await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${hrItemId}, 'hr-admin')`
  const moved = await readRowsChangedSince(sql, nothing.watermark)
  t.equal(moved.complete, false)
  t.same(
    moved.rows.apps.map((app) => app.appKey),
    ['hr'],
  )
  t.same(
    moved.rows.menuItems.map((item) => item.appKey),
    ['hr'],
  )
  t.same(moved.rows.grants, [{ menuItemId: hrItemId, role: 'hr-admin' }])
  const [hr] = moved.rows.apps
  t.equal(hr?.revision, (await revisions()).get('hr'), 'with its revision')
})

t.test('a change by a transaction still open at a read is found by the next read', async (t) => {
  // The order a sequence cannot tell: crm's change starts first and commits last.
  const slow = await sql.reserve()
  t.teardown(() => slow.release())
  await slow`begin`
  await slow`update shell.apps set name = 'CRM slow' where app_key = 'crm'`
  await sql`update shell.apps set name = 'HR fast' where app_key = 'hr'`
  const between = await readAllRows(sql)
  t.not(between.rows.apps.find((app) => app.appKey === 'crm')?.name, 'CRM slow', 'not yet')
  await slow`commit`
  const after = await readRowsChangedSince(sql, between.watermark)
  t.equal(
    after.rows.apps.find((app) => app.appKey === 'crm')?.name,
    'CRM slow',
    'the late commit is read',
  )
  const check = await readRevisionsChangedSince(sql, between.watermark)
  t.equal(check.revisions.get('crm'), (await revisions()).get('crm'), 'and the check sees it too')
})

t.test('a read of changed apps gives the same rows, value for value, as a full read', async (t) => {
  await sql`insert into shell.branding (app_key, theme, primary_color) values ('crm', '{"a":[1,{"b":null}]}', '#0b5fff')`
  await sql`
    insert into shell.menu_items (app_key, item_key, zone, label, parent_id, position, kind, external, href)
    values ('crm', 'child', 'sidebar', 'Child', ${crmItemId}, 3, 'action', true, '/x')`
  await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${crmItemId}, 'crm-x')`
  await sql`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${crmItemId}, 'de-CH', 'Ä')`
  await sql`update shell.apps set default_locale = 'fr', description = 'd' where app_key = 'crm'`
  const full = await readAllRows(sql)
  const changed = await readRowsChangedSince(sql, '0')
  const byKey = (rows: readonly object[]) => rows.map((row) => JSON.stringify(row)).sort()
  for (const table of ['apps', 'branding', 'menuItems', 'grants', 'labels'] as const) {
    t.same(byKey(changed.rows[table]), byKey(full.rows[table]), table)
  }
  const item = changed.rows.menuItems.find((row) => row.itemKey === 'child')
  t.equal(typeof item?.id, 'string', 'ids as decimal strings')
  t.equal(typeof item?.parentId, 'string')
  t.equal(item?.position, 3)
  t.equal(item?.external, true)
})

t.test('a read since names the apps deleted since, and reads the added ones', async (t) => {
  await sql`insert into shell.apps (app_key, name) values ('gone', 'Gone')`
  const before = await readAllRows(sql)
  await sql`insert into shell.branding (app_key) values ('gone')`
  await sql`delete from shell.apps where app_key = 'gone'`
  await sql`insert into shell.apps (app_key, name) values ('added', 'Added')`
  const read = await readRowsChangedSince(sql, before.watermark)
  t.same(read.removedApps, ['gone'])
  t.same(
    read.rows.apps.map((app) => app.appKey),
    ['added'],
  )
  const check = await readRevisionsChangedSince(sql, before.watermark)
  t.equal(check.revisions.get('gone'), null, 'the check says deleted')
  t.ok(check.revisions.get('added'))
  t.same((await readAllRows(sql)).rows.apps.map((app) => app.appKey).sort(), ['added', 'crm', 'hr'])
})

t.test('TRUNCATE moves every revision', async (t) => {
  const before = await revisions()
  await sql`truncate shell.menu_role_grants`
  const after = await revisions()
  for (const [appKey, revision] of before) t.not(after.get(appKey), revision, appKey)
})

t.test('a revision is never handed out again, even by a sequence set back', async (t) => {
  // As a new primary does after a failover that lost the commits that drew these values.
  const [{ drawn } = { drawn: '0' }] = await sql<{ drawn: string }[]>`
    select last_value::text as drawn from shell.app_revision_seq`
  const seen = new Set<string>()
  for (const name of ['One', 'Two']) {
    await sql`update shell.apps set name = ${name} where app_key = 'crm'`
    seen.add((await revisions()).get('crm') ?? '')
  }
  await sql`select setval('shell.app_revision_seq', ${drawn}::bigint)`
  await sql`update shell.apps set name = 'Three' where app_key = 'crm'`
  const again = (await revisions()).get('crm') ?? ''
  t.notOk(seen.has(again), 'the same sequence values, another revision')
  t.equal(seen.size, 2)
})

t.test(
  'a commit of one app is read in one statement: a loaded event loop gives each a turn',
  async (t) => {
    const statements: string[] = []
    const counted = connectDatabase(db.url, { max: 1 })
    t.teardown(() => counted.end())
    // The driver's debug hook sees every statement sent, BEGIN and COMMIT included.
    counted.options.debug = (_connection: number, query: string) => {
      statements.push(query)
    }
    const before = await readAllRows(counted)
    statements.length = 0
    await sql`update shell.menu_items set label = 'One' where id = ${crmItemId}`
    const read = await readRowsChangedSince(counted, before.watermark)
    t.same(
      read.rows.apps.map((app) => app.appKey),
      ['crm'],
    )
    t.equal(statements.length, 1, 'one statement, no transaction around it')
  },
)

t.test(
  'more apps changed than one statement reads are read by chunk, as a full read reads them',
  async (t) => {
    const before = await readAllRows(sql)
    const appKeys = Array.from({ length: FEW_APPS + 2 }, (_, index) => `many-${index + 10}`)
    for (const appKey of appKeys) {
      await sql`insert into shell.apps (app_key, name) values (${appKey}, ${appKey})`
      await sql`insert into shell.menu_items (app_key, item_key, zone, label) values (${appKey}, 'a', 'sidebar', 'A')`
    }
    const read = await readRowsChangedSince(sql, before.watermark)
    t.equal(read.complete, false)
    t.same(
      read.rows.apps.map((app) => app.appKey),
      appKeys,
      'every changed app, in key order',
    )
    const full = await readAllRows(sql)
    const ofMany = (rows: readonly { appKey: string }[]) =>
      rows.filter((row) => appKeys.includes(row.appKey)).map((row) => JSON.stringify(row))
    t.same(ofMany(read.rows.menuItems), ofMany(full.rows.menuItems), 'their items, value for value')
    const check = await readRevisionsChangedSince(sql, read.watermark)
    t.equal(check.revisions.size, 0, 'and the next read starts after them')
  },
)
