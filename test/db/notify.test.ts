import t from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { createTestDatabase } from '../helpers/database.js'
import { waitFor } from '../helpers/wait.js'

const db = await createTestDatabase(t)
const sql = db.sql
const listener = postgres(db.url, { max: 1, onnotice: () => {} })
t.teardown(() => listener.end({ timeout: 5 }))

const received: string[] = []
await listener.listen('shell_changed', (payload) => received.push(payload))

await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
const [item] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'sidebar', 'A') returning id`
const itemId = item?.id ?? ''

let markers = 0
/** A marker notification round trip: everything committed before it has arrived; then forget it all. */
async function settle(): Promise<void> {
  const marker = `marker-${markers++}`
  await sql`select pg_notify('shell_changed', ${marker})`
  await waitFor(() => received.includes(marker), `the marker ${marker}`)
  received.length = 0
}

const changes: Array<[string, string, (tx: postgres.TransactionSql) => Promise<unknown>]> = [
  ['apps', 'insert', (tx) => tx`insert into shell.apps (app_key, name) values ('x', 'X')`],
  ['apps', 'update', (tx) => tx`update shell.apps set name = 'CRM 2' where app_key = 'crm'`],
  ['apps', 'delete', (tx) => tx`delete from shell.apps where app_key = 'nothing-like-this'`],
  ['branding', 'insert', (tx) => tx`insert into shell.branding (app_key) values ('crm')`],
  [
    'branding',
    'update',
    (tx) => tx`update shell.branding set footer_text = 'f' where app_key = 'crm'`,
  ],
  ['branding', 'delete', (tx) => tx`delete from shell.branding where app_key = 'crm'`],
  [
    'menu_items',
    'insert',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'b', 'footer', 'B')`,
  ],
  [
    'menu_items',
    'update',
    (tx) => tx`update shell.menu_items set label = 'A2' where id = ${itemId}`,
  ],
  ['menu_items', 'delete', (tx) => tx`delete from shell.menu_items where item_key = 'b'`],
  [
    'menu_role_grants',
    'insert',
    (tx) => tx`insert into shell.menu_role_grants (menu_item_id, role) values (${itemId}, 'r')`,
  ],
  [
    'menu_role_grants',
    'update',
    (tx) => tx`update shell.menu_role_grants set role = 's' where menu_item_id = ${itemId}`,
  ],
  [
    'menu_role_grants',
    'delete',
    (tx) => tx`delete from shell.menu_role_grants where menu_item_id = ${itemId}`,
  ],
  [
    'menu_item_labels',
    'insert',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${itemId}, 'de', 'A')`,
  ],
  [
    'menu_item_labels',
    'update',
    (tx) => tx`update shell.menu_item_labels set label = 'A2' where menu_item_id = ${itemId}`,
  ],
  [
    'menu_item_labels',
    'delete',
    (tx) => tx`delete from shell.menu_item_labels where menu_item_id = ${itemId}`,
  ],
]

for (const [table, operation, change] of changes) {
  t.test(`${operation} on ${table} notifies after COMMIT and not after ROLLBACK`, async (t) => {
    await settle()
    await sql
      .begin(async (tx) => {
        await change(tx)
        throw new Error('rollback')
      })
      .catch(() => {})
    await settle()
    t.same(received, [], 'nothing after ROLLBACK')
    await sql.begin(async (tx) => {
      await change(tx)
      await tx`select pg_sleep(0.05)`
      t.same(received, [], 'nothing before COMMIT')
    })
    await waitFor(() => received.length > 0, 'a notification after COMMIT')
    t.equal(received[0], table, 'a notification naming the table')
    t.ok(
      received.every(
        (name) => name === table || name === 'menu_role_grants' || name === 'menu_item_labels',
      ),
      'others only from cascades',
    )
  })
}
