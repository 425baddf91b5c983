/**
 * Windows of time on a real PostgreSQL: the feed's timer switches the served
 * bytes at each instant, with no database change, within a second; a window
 * changed by SQL is followed; and a window that opens while the database is
 * down opens all the same.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import type { Sql } from '../../src/db/connect.js'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { createSnapshotFeed, type SnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics } from '../../src/metrics.js'
import { createTestDatabase } from '../helpers/database.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'
import { waitFor } from '../helpers/wait.js'
import { callerWith, outlineZone } from '../snapshot/rows.js'

/** How long after its instant a window's change may take to be served. */
const WITHIN_MS = 1_000

function startFeed(t: Test, url: string): SnapshotFeed {
  const metrics = createMetrics({ defaultMetrics: false })
  const feed = createSnapshotFeed({
    readUrl: url,
    feedUrl: url,
    logger: pino({ level: 'silent' }),
    metrics,
  })
  feed.start()
  t.teardown(() => feed.close())
  return feed
}

const sidebarOf = (feed: SnapshotFeed) => {
  const view = feed.current()?.app('crm')
  return view === undefined ? undefined : outlineZone(view.variant(callerWith([]), 'en'))
}

/** crm with `home`, and `closing` and `opening`, whose window bounds are `at`. */
async function insertWindowedApp(sql: Sql, at: Date): Promise<void> {
  await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
  await sql`
    insert into shell.menu_items (app_key, item_key, zone, label, position, visible_from, visible_until)
    values ('crm', 'home', 'sidebar', 'Home', 0, null, null),
           ('crm', 'closing', 'sidebar', 'Closing', 1, null, ${at}),
           ('crm', 'opening', 'sidebar', 'Opening', 2, ${at}, null)`
}

t.test('a window opens and another closes at their instant, with no database change', async (t) => {
  const db = await createTestDatabase(t)
  const instant = new Date(Date.now() + 1_500)
  await insertWindowedApp(db.sql, instant)
  const feed = startFeed(t, db.url)
  await waitFor(() => sidebarOf(feed) === 'home,closing', 'the first snapshot, before the instant')
  await waitFor(() => sidebarOf(feed) === 'home,opening', 'the windows switching', 5_000)
  const lateMs = Date.now() - instant.getTime()
  t.ok(lateMs >= 0, 'not before the instant')
  t.ok(lateMs < WITHIN_MS, `served ${lateMs} ms after the instant`)
})

t.test('a window changed by SQL while the feed runs is followed, ahead and behind', async (t) => {
  const db = await createTestDatabase(t)
  await insertWindowedApp(db.sql, new Date(Date.UTC(2040, 0, 1)))
  const feed = startFeed(t, db.url)
  await waitFor(
    () => sidebarOf(feed) === 'home,closing',
    'a window years ahead: closing still shown',
  )
  t.equal(feed.current()?.nextChangeAt, Date.UTC(2040, 0, 1), 'its instant known')
  await db.sql`update shell.menu_items set visible_until = now() - interval '1 hour' where item_key = 'closing'`
  await waitFor(() => sidebarOf(feed) === 'home', 'a window moved into the past')
  const soon = new Date(Date.now() + 1_000)
  await db.sql`update shell.menu_items set visible_from = ${soon} where item_key = 'opening'`
  await waitFor(
    () => sidebarOf(feed) === 'home,opening',
    'a window moved to a second from now',
    5_000,
  )
  t.ok(Date.now() >= soon.getTime(), 'at its new instant, not before')
})

t.test('a window that opens while the database is down opens all the same', async (t) => {
  const server = await startPrivatePostgres()
  t.teardown(() => server.remove())
  const sql = connectDatabase(server.adminUrl, { max: 2 })
  t.teardown(() => sql.end({ timeout: 1 }))
  await migrateDatabase(sql)
  const instant = new Date(Date.now() + 3_000)
  await insertWindowedApp(sql, instant)
  const feed = startFeed(t, server.adminUrl)
  await waitFor(() => sidebarOf(feed) === 'home,closing', 'the first snapshot')
  await server.stop()
  await waitFor(() => sidebarOf(feed) === 'home,opening', 'the window opening', 10_000)
  t.ok(Date.now() - instant.getTime() < WITHIN_MS, 'at its instant, the database still down')
})
