import t from 'tap'
import type postgres from '../../src/db/postgres-driver.js'
import { createTestDatabase } from '../helpers/database.js'

const db = await createTestDatabase(t)
const sql = db.sql

await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
const [sidebarRoot] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'root', 'sidebar', 'Root')
  returning id`
const rootId = sidebarRoot?.id ?? ''

/** Runs a statement in a transaction that is always rolled back, and returns its SQLSTATE. */
async function sqlStateOf(
  statement: (tx: postgres.TransactionSql) => Promise<unknown>,
): Promise<string | null> {
  try {
    await sql.begin(async (tx) => {
      await statement(tx)
      throw new Error('rollback')
    })
  } catch (error) {
    const code = (error as { code?: string }).code
    return code ?? null
  }
  return null
}

const rejected: Array<[string, string, (tx: postgres.TransactionSql) => Promise<unknown>]> = [
  [
    'app key with capitals',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values ('CRM2', 'x')`,
  ],
  [
    'app key starting with a dash',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values ('-crm', 'x')`,
  ],
  [
    'app key of 64 characters',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values (${'a'.repeat(64)}, 'x')`,
  ],
  ['app without name', '23502', (tx) => tx`insert into shell.apps (app_key) values ('x')`],
  [
    'duplicate app key',
    '23505',
    (tx) => tx`insert into shell.apps (app_key, name) values ('crm', 'again')`,
  ],
  [
    'branding of an unknown app',
    '23503',
    (tx) => tx`insert into shell.branding (app_key) values ('nope')`,
  ],
  [
    'branding twice',
    '23505',
    (tx) => tx`insert into shell.branding (app_key) values ('crm'), ('crm')`,
  ],
  [
    'primary colour by name',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, primary_color) values ('crm', 'blue')`,
  ],
  [
    'accent colour of 3 digits',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, accent_color) values ('crm', '#fff')`,
  ],
  [
    'theme that is not an object',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, theme) values ('crm', '[1]')`,
  ],
  [
    'theme null',
    '23502',
    (tx) => tx`insert into shell.branding (app_key, theme) values ('crm', null)`,
  ],
  [
    'item of an unknown app',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('nope', 'a', 'sidebar', 'A')`,
  ],
  [
    'item key with a space',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a b', 'sidebar', 'A')`,
  ],
  [
    'item key starting with a dot',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', '.a', 'sidebar', 'A')`,
  ],
  [
    'duplicate item key in an app',
    '23505',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'root', 'footer', 'A')`,
  ],
  [
    'unknown zone',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'header', 'A')`,
  ],
  [
    'unknown kind',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, kind) values ('crm', 'a', 'sidebar', 'A', 'button')`,
  ],
  [
    'item without label',
    '23502',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone) values ('crm', 'a', 'sidebar')`,
  ],
  [
    'external null',
    '23502',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, external) values ('crm', 'a', 'sidebar', 'A', null)`,
  ],
  [
    'parent in another zone',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a', 'footer', 'A', ${rootId})`,
  ],
  [
    'parent in another app',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('hr', 'a', 'sidebar', 'A', ${rootId})`,
  ],
  [
    'parent that does not exist',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a', 'sidebar', 'A', 999999)`,
  ],
  [
    'item as its own parent',
    '23514',
    (tx) => tx`update shell.menu_items set parent_id = id where id = ${rootId}`,
  ],
  [
    'explicit id',
    '428C9',
    (tx) =>
      tx`insert into shell.menu_items (id, app_key, item_key, zone, label) values (5, 'crm', 'a', 'sidebar', 'A')`,
  ],
  [
    'grant of an unknown item',
    '23503',
    (tx) => tx`insert into shell.menu_role_grants (menu_item_id, role) values (999999, 'r')`,
  ],
  [
    'grant twice',
    '23505',
    (tx) =>
      tx`insert into shell.menu_role_grants (menu_item_id, role) values (${rootId}, 'r'), (${rootId}, 'r')`,
  ],
  [
    'blank role',
    '23514',
    (tx) => tx`insert into shell.menu_role_grants (menu_item_id, role) values (${rootId}, ' ')`,
  ],
]

for (const [name, code, statement] of rejected) {
  t.test(`rejects ${name}`, async (t) => {
    t.equal(await sqlStateOf(statement), code)
  })
}

t.test('accepts the edge cases the rules allow', async (t) => {
  t.equal(
    await sqlStateOf(async (tx) => {
      await tx`insert into shell.apps (app_key, name) values (${`a${'-'.repeat(62)}`}, 'x'), ('0', 'y')`
      await tx`insert into shell.branding (app_key, primary_color, accent_color) values ('hr', '#0B5FFF', null)`
      await tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a.b_c-d', 'sidebar', 'A', ${rootId})`
      await tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('hr', 'root', 'user-menu', 'Same key, other app')`
    }),
    null,
  )
})

t.test('defaults: position 0, kind link, external false, theme {}', async (t) => {
  await sql
    .begin(async (tx) => {
      await tx`insert into shell.branding (app_key) values ('hr')`
      const [branding] = await tx<
        { theme: unknown }[]
      >`select theme from shell.branding where app_key = 'hr'`
      t.same(branding?.theme, {})
      const [item] = await tx<{ position: number; kind: string; external: boolean }[]>`
      select position, kind, external from shell.menu_items where id = ${rootId}`
      t.same(item, { position: 0, kind: 'link', external: false })
      await tx`select 1/0`
    })
    .catch(() => {})
})

t.test('a cycle through several items is refused', async (t) => {
  const code = await sqlStateOf(async (tx) => {
    const [child] = await tx<{ id: string }[]>`
      insert into shell.menu_items (app_key, item_key, zone, label, parent_id)
      values ('crm', 'child', 'sidebar', 'Child', ${rootId}) returning id`
    await tx`update shell.menu_items set parent_id = ${child?.id ?? ''} where id = ${rootId}`
  })
  t.equal(code, '23514')
})

t.test('updated_at follows every update of an app', async (t) => {
  const [before] = await sql<
    { updated_at: Date }[]
  >`select updated_at from shell.apps where app_key = 'crm'`
  await sql`select pg_sleep(0.01)`
  await sql`update shell.apps set name = 'CRM!' where app_key = 'crm'`
  const [after] = await sql<
    { updated_at: Date }[]
  >`select updated_at from shell.apps where app_key = 'crm'`
  t.ok((after?.updated_at.getTime() ?? 0) > (before?.updated_at.getTime() ?? 0))
})

t.test('deleting an app removes its branding, items and grants', async (t) => {
  await sql`insert into shell.apps (app_key, name) values ('gone', 'Gone')`
  await sql`insert into shell.branding (app_key) values ('gone')`
  const [parent] = await sql<{ id: string }[]>`
    insert into shell.menu_items (app_key, item_key, zone, label) values ('gone', 'p', 'topbar', 'P') returning id`
  const [child] = await sql<{ id: string }[]>`
    insert into shell.menu_items (app_key, item_key, zone, label, parent_id)
    values ('gone', 'c', 'topbar', 'C', ${parent?.id ?? ''}) returning id`
  await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${child?.id ?? ''}, 'r')`
  await sql`delete from shell.apps where app_key = 'gone'`
  const [counts] = await sql<{ branding: number; items: number; grants: number }[]>`
    select (select count(*)::int from shell.branding where app_key = 'gone') as branding,
           (select count(*)::int from shell.menu_items where app_key = 'gone') as items,
           (select count(*)::int from shell.menu_role_grants where menu_item_id = ${child?.id ?? ''}) as grants`
  t.same(counts, { branding: 0, items: 0, grants: 0 })
})
