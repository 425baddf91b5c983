import pino from 'pino'
import t, { type Test } from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import postgres from '../../src/db/postgres-driver.js'
import {
  createSnapshotFeed,
  type SnapshotFeed,
  type SnapshotFeedOptions,
} from '../../src/feed/snapshot-feed.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { readMetric, snapshotAgeSeconds } from '../helpers/metrics.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'
import { sleep, waitFor } from '../helpers/wait.js'
import { callerWith } from '../snapshot/rows.js'

const silent = pino({ level: 'silent' })

interface LogLine {
  readonly level: number
  readonly msg: string
  readonly error?: { code?: string }
}

/** A logger whose lines the test can read. */
function recordingLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  return { logger, lines }
}

/** A started feed reading `readUrl`, listening on `feedUrl`, closed at teardown. */
function startFeed(
  t: Test,
  readUrl: string,
  feedUrl: string,
  overrides: Partial<SnapshotFeedOptions> = {},
): { feed: SnapshotFeed; metrics: Metrics } {
  const metrics = createMetrics({ defaultMetrics: false })
  const feed = createSnapshotFeed({ readUrl, feedUrl, logger: silent, metrics, ...overrides })
  feed.start()
  t.teardown(() => feed.close())
  return { feed, metrics }
}

const reloadsOf = (metrics: Metrics, result: 'success' | 'error') =>
  readMetric(metrics.snapshotReloads, { result })
const listeningOf = (metrics: Metrics) => readMetric(metrics.feedListening)

/** The shell body one caller would get, parsed. */
function renderShell(snapshot: Snapshot | undefined, appKey: string, roles: string[]): unknown {
  const variant = snapshot?.app(appKey)?.variant(callerWith(roles), 'en')
  if (variant === undefined) return undefined
  return JSON.parse(Buffer.concat([variant.head, Buffer.from('null'), variant.tail]).toString())
}

type Shell = {
  app: { name: string }
  branding: Record<string, unknown>
  menus: Record<string, { id: string; label: string }[]>
}
const shellOf = (feed: SnapshotFeed, appKey = 'crm', roles: string[] = []) =>
  renderShell(feed.current(), appKey, roles) as Shell | undefined
const sidebarLabels = (feed: SnapshotFeed, roles: string[] = []) =>
  shellOf(feed, 'crm', roles)?.menus.sidebar?.map((item) => item.label)
const appNameOf = (feed: SnapshotFeed) => shellOf(feed)?.app.name

/** The server processes of the feed's listening connections (or others) to the test database. */
async function feedBackends(db: TestDatabase, application = 'shell-data-feed'): Promise<number[]> {
  const rows = await db.sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = ${db.name} and application_name = ${application}`
  return rows.map((row) => row.pid)
}

t.test('each kind of change on each table reaches the snapshot', async (t) => {
  const db = await createTestDatabase(t)
  const { feed } = startFeed(t, db.url, db.url)
  await waitFor(() => feed.current() !== undefined, 'the first snapshot')
  t.equal(feed.current()?.appKeys.length, 0)

  const steps: Array<[string, (sql: postgres.Sql) => Promise<unknown>, () => boolean]> = [
    [
      'insert app',
      (sql) => sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`,
      () => appNameOf(feed) === 'CRM',
    ],
    [
      'update app',
      (sql) => sql`update shell.apps set name = 'CRM 2'`,
      () => appNameOf(feed) === 'CRM 2',
    ],
    [
      'insert branding',
      (sql) => sql`insert into shell.branding (app_key, product_name) values ('crm', 'Acme')`,
      () => shellOf(feed)?.branding.productName === 'Acme',
    ],
    [
      'update branding',
      (sql) => sql`update shell.branding set primary_color = '#123456'`,
      () => shellOf(feed)?.branding.primaryColor === '#123456',
    ],
    [
      'delete branding',
      (sql) => sql`delete from shell.branding`,
      () => shellOf(feed)?.branding.productName === 'CRM 2',
    ],
    [
      'insert item',
      (sql) =>
        sql`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'sidebar', 'A')`,
      () => sidebarLabels(feed)?.join() === 'A',
    ],
    [
      'update item',
      (sql) => sql`update shell.menu_items set label = 'A2'`,
      () => sidebarLabels(feed)?.join() === 'A2',
    ],
    [
      'insert grant',
      (sql) =>
        sql`insert into shell.menu_role_grants (menu_item_id, role) select id, 'admin' from shell.menu_items`,
      () => sidebarLabels(feed)?.length === 0 && sidebarLabels(feed, ['admin'])?.join() === 'A2',
    ],
    [
      'update grant',
      (sql) => sql`update shell.menu_role_grants set role = 'boss'`,
      () => sidebarLabels(feed, ['admin'])?.length === 0,
    ],
    [
      'delete grant',
      (sql) => sql`delete from shell.menu_role_grants`,
      () => sidebarLabels(feed)?.join() === 'A2',
    ],
    [
      'delete item',
      (sql) => sql`delete from shell.menu_items`,
      () => sidebarLabels(feed)?.length === 0,
    ],
    [
      'delete app',
      (sql) => sql`delete from shell.apps`,
      () => feed.current()?.app('crm') === undefined,
    ],
  ]
  for (const [name, change, reached] of steps) {
    await change(db.sql)
    await waitFor(reached, name, 5_000)
    t.pass(name)
  }
})

t.test(
  'a burst of 200 commits ends in a correct snapshot after a handful of reloads',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
    const { feed, metrics } = startFeed(t, db.url, db.url)
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening')
    await waitFor(() => feed.current() !== undefined, 'the first snapshot')
    const before = await reloadsOf(metrics, 'success')
    // A writer with named statements (the service's pool has none), so the burst is dense.
    const other = postgres(db.url, { max: 4, onnotice: () => {} })
    t.teardown(() => other.end())
    await Promise.all(
      Array.from(
        { length: 200 },
        (_, index) =>
          other`insert into shell.menu_items (app_key, item_key, zone, label, position)
            values ('crm', ${`item-${index}`}, 'sidebar', ${`Item ${index}`}, ${index})`,
      ),
    )
    await waitFor(() => sidebarLabels(feed)?.length === 200, 'all 200 items in the snapshot')
    t.equal(sidebarLabels(feed)?.[199], 'Item 199')
    const used = (await reloadsOf(metrics, 'success')) - before
    t.comment(`${used} reloads for 200 commits`)
    t.ok(used >= 1 && used <= 20, `a handful of reloads, not 200 (got ${used})`)
  },
)

t.test('a change committed during a reload causes one more reload and is not lost', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'Before')`
  let committedDuringReload = false
  let reads = 0
  const { feed } = startFeed(t, db.url, db.url, {
    async onRead() {
      reads += 1
      // The rows of this reload are read; commit a change before the reload finishes.
      if (reads === 2) {
        await db.sql`update shell.apps set name = 'After'`
        committedDuringReload = true
      }
    },
  })
  await waitFor(() => feed.current() !== undefined, 'the first snapshot')
  await db.sql`update shell.apps set name = 'Middle'`
  await waitFor(() => committedDuringReload, 'a commit during the second reload')
  await waitFor(() => appNameOf(feed) === 'After', 'the change made during the reload')
  t.pass('the change made during the reload is served')
})

t.test(
  'a change to one app reads and builds that app only; after a reconnect, what changed meanwhile',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
    await db.sql`
      insert into shell.menu_items (app_key, item_key, zone, label)
      values ('crm', 'a', 'sidebar', 'A'), ('hr', 'b', 'sidebar', 'B')`
    const reads: { complete: boolean; apps: string[] }[] = []
    const { feed, metrics } = startFeed(t, db.url, db.url, {
      onRead(read) {
        reads.push({ complete: read.complete, apps: [...read.appKeys].sort() })
      },
    })
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening')
    await waitFor(() => feed.current()?.appKeys.length === 2, 'the first snapshot')
    t.same(reads[0], { complete: true, apps: ['crm', 'hr'] }, 'the read after LISTEN is full')
    const hrView = feed.current()?.app('hr')
    const readsBefore = reads.length
    await db.sql`update shell.menu_items set label = 'A2' where app_key = 'crm'`
    await waitFor(() => sidebarLabels(feed)?.join() === 'A2', 'the change')
    t.same(reads.slice(readsBefore), [{ complete: false, apps: ['crm'] }], 'only crm was read')
    t.equal(feed.current()?.app('hr'), hrView, 'hr was taken over as it was')

    const beforeReconnect = reads.length
    const beforeSnapshot = feed.current()
    for (const pid of await feedBackends(db)) await db.sql`select pg_terminate_backend(${pid})`
    await waitFor(() => reads.length > beforeReconnect, 'a reload after the reconnect')
    t.same(
      reads[beforeReconnect],
      { complete: true, apps: [] },
      'which checks every app and reads none: nothing changed',
    )
    t.equal(feed.current(), beforeSnapshot, 'the snapshot in service stays')

    // Changed while nobody listened: the complete read after the reconnect reads that app only.
    const crmView = feed.current()?.app('crm')
    const lateReconnect = reads.length
    const backends = await feedBackends(db)
    await db.sql`select pg_terminate_backend(pid) from unnest(${db.sql.array(backends)}::int[]) as pid`
    await db.sql`update shell.menu_items set label = 'B2' where app_key = 'hr'`
    await waitFor(
      () => reads.some((read, index) => index >= lateReconnect && read.complete),
      'the complete read',
    )
    await waitFor(() => shellOf(feed, 'hr')?.menus.sidebar?.[0]?.label === 'B2', 'the change')
    t.ok(
      reads.slice(lateReconnect).every((read) => read.apps.every((app) => app === 'hr')),
      'no read took crm again',
    )
    t.equal(feed.current()?.app('crm'), crmView, "crm's view kept")
  },
)

t.test(
  'the listening connection killed by pg_terminate_backend: said, remade, and changes flow',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
    const { logger, lines } = recordingLogger()
    const { feed, metrics } = startFeed(t, db.url, db.url, { logger })
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening')
    const backends = await feedBackends(db)
    t.equal(backends.length, 1, 'one listening connection')
    await db.sql`select pg_terminate_backend(${backends[0] ?? 0})`
    await waitFor(
      () =>
        lines.some((line) => line.level === 40 && /listening connection was lost/.test(line.msg)),
      'a warning',
    )
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening again')
    await db.sql`update shell.apps set name = 'Two'`
    await waitFor(() => appNameOf(feed) === 'Two', 'the change after the reconnect')
    t.pass('the change is in the snapshot')
  },
)

t.test(
  'a reload whose connection is terminated mid-read fails, keeps the snapshot, and the next succeeds',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
    const { feed, metrics } = startFeed(t, db.url, db.url)
    await waitFor(async () => (await reloadsOf(metrics, 'success')) >= 1, 'the first reload')
    const loaded = feed.current()
    // A second session holds the apps table, so the next reload waits inside its read.
    const other = postgres(db.url, { max: 1, onnotice: () => {} })
    t.teardown(() => other.end({ timeout: 1 }))
    const locker = await other.reserve()
    t.teardown(() => locker.release())
    await locker`begin`
    await locker`lock table shell.apps in access exclusive mode`
    feed.requestReload()
    let waiting: { pid: number }[] = []
    await waitFor(async () => {
      // Not through the locker: inside its transaction pg_stat_activity stays as first read.
      waiting = await db.sql<{ pid: number }[]>`
        select pid from pg_stat_activity
        where datname = ${db.name} and wait_event_type = 'Lock' and pid <> pg_backend_pid()`
      return waiting.length === 1
    }, 'the reload waiting on the lock')
    // Terminating it fails the read; postgres.js then writes its own ROLLBACK on the closed
    // connection, which threw from a timer before the vendored driver's fixes.
    await locker`select pg_terminate_backend(${waiting[0]?.pid ?? 0})`
    await locker`rollback`
    await waitFor(async () => (await reloadsOf(metrics, 'error')) >= 1, 'the reload failing')
    t.equal(feed.current(), loaded, 'the snapshot in service is kept')
    await db.sql`update shell.apps set name = 'Two'`
    await waitFor(() => appNameOf(feed) === 'Two', 'the pool to recover')
    t.pass('the next reload succeeds')
  },
)

/** A feed whose listening connection goes through a TCP proxy while its pool does not. */
async function startFeedWithProxiedListener(t: Test) {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const { hostname, port } = new URL(db.url)
  const proxy = await startTcpProxy(hostname, Number(port))
  t.teardown(() => proxy.close())
  const { logger, lines } = recordingLogger()
  const started = startFeed(t, db.url, proxy.route(db.url), { logger, checkIntervalMs: 200 })
  await waitFor(async () => (await listeningOf(started.metrics)) === 1, 'listening')
  await waitFor(() => appNameOf(started.feed) === 'One', 'the first snapshot')
  return { ...started, db, proxy, lines }
}

t.test(
  'a silent, half-open listening connection: the check serves the change, then remakes it',
  async (t) => {
    const { db, proxy, feed, metrics, lines } = await startFeedWithProxiedListener(t)
    const [frozen = 0] = await feedBackends(db)
    proxy.freeze()
    await db.sql`update shell.apps set name = 'Two'`
    await waitFor(() => appNameOf(feed) === 'Two', 'the change, found by the check')
    await waitFor(
      () => lines.some((line) => /went silent; reconnecting/.test(line.msg)),
      'the listening connection found deaf',
    )
    await waitFor(
      async () => !(await feedBackends(db)).includes(frozen),
      'a new listening connection in place of the frozen one',
    )
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening again')
    const warnings = lines.filter((line) => line.level === 40).length
    await db.sql`update shell.apps set name = 'Three'`
    await waitFor(() => appNameOf(feed) === 'Three', 'the next change')
    t.equal(
      lines.filter((line) => line.level === 40).length,
      warnings,
      'heard on the new connection: nothing more to say',
    )
  },
)

t.test(
  'a change committed before LISTEN is back, found by a check that LISTEN overtakes: not deafness',
  async (t) => {
    const { db, proxy, feed, metrics, lines } = await startFeedWithProxiedListener(t)
    // The listening connection is lost and its next one is held being made, as while
    // PostgreSQL restarts; a change is committed meanwhile, which nobody hears.
    proxy.hold()
    proxy.cut()
    await waitFor(async () => (await listeningOf(metrics)) === 0, 'the loss noticed')
    await db.sql`update shell.apps set name = 'Two'`
    // The next check's read waits on a lock, so that LISTEN comes back during it.
    const other = postgres(db.url, { max: 1, onnotice: () => {} })
    t.teardown(() => other.end({ timeout: 1 }))
    const locker = await other.reserve()
    t.teardown(() => locker.release())
    await locker`begin`
    await locker`lock table shell.app_revisions in access exclusive mode`
    await waitFor(async () => {
      const waiting = await db.sql`
        select pid from pg_stat_activity
        where datname = ${db.name} and wait_event_type = 'Lock' and pid <> pg_backend_pid()`
      return waiting.length === 1
    }, 'the check waiting on the lock')
    proxy.release()
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening again')
    await locker`rollback`
    await waitFor(() => appNameOf(feed) === 'Two', 'the change')
    // Two checks that find nothing: the one after the change would have called it deaf.
    for (let confirmed = 0; confirmed < 2; confirmed += 1) {
      const after = Date.now()
      await waitFor(
        () => snapshotAgeSeconds(feed) * 1000 < Date.now() - after,
        'a check confirming the snapshot',
      )
    }
    t.notOk(
      lines.some((line) => /went silent|does not work/.test(line.msg)),
      'the change came before LISTEN: no deafness said',
    )
    t.equal(await listeningOf(metrics), 1, 'still listening')
  },
)

t.test('with no LISTEN at all, the check alone follows the database', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  // Nothing listens on port 1: LISTEN fails over and over, reads work.
  const { feed, metrics } = startFeed(t, db.url, 'postgres://nobody@127.0.0.1:1/none', {
    checkIntervalMs: 200,
  })
  await waitFor(() => appNameOf(feed) === 'One', 'the first snapshot, without LISTEN')
  await db.sql`update shell.apps set name = 'Two'`
  await waitFor(() => appNameOf(feed) === 'Two', 'the change, found by the check', 5_000)
  t.equal(await listeningOf(metrics), 0, 'shell_feed_listening says so')
  t.ok(snapshotAgeSeconds(feed) < 2, 'and the snapshot is fresh')
})

/** A feed whose reads go through a TCP proxy while its listening connection does not. */
async function startFeedWithProxiedPool(t: Test) {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const target = new URL(db.url)
  const proxy = await startTcpProxy(target.hostname, Number(target.port))
  t.teardown(() => proxy.close())
  const { logger, lines } = recordingLogger()
  const started = startFeed(t, proxy.route(db.url), db.url, { logger, readTimeoutMs: 1_000 })
  await waitFor(async () => (await listeningOf(started.metrics)) === 1, 'listening')
  await waitFor(() => appNameOf(started.feed) === 'One', 'the first snapshot')
  return { ...started, db, proxy, lines }
}

t.test(
  'a read connection gone silent: the read gives up at its deadline and ends it; the next gets through',
  async (t) => {
    const { proxy, db, feed, metrics, lines } = await startFeedWithProxiedPool(t)
    proxy.freeze()
    // A change: its reload waits on the silent connection until the deadline.
    await db.sql`update shell.apps set name = 'Two'`
    const timedOut = () =>
      lines.some((line) => line.error?.code === 'READ_TIMEOUT' && line.level === 40)
    await waitFor(timedOut, 'the reload giving up at its deadline', 5_000)
    t.ok((await reloadsOf(metrics, 'error')) >= 1, 'counted as a failed reload')
    // The silent connection is still open (frozen, not closed): only a new one can answer.
    await waitFor(() => appNameOf(feed) === 'Two', 'the change, on a new connection', 5_000)
    t.pass('served without the silent connection coming back')
  },
)

t.test(
  'a silent partition: reads keep ending their connections, and the one after it heals gets through',
  async (t) => {
    const { proxy, db, feed, metrics, lines } = await startFeedWithProxiedPool(t)
    // Open connections go silent and new ones hang being made: nothing reaches the database.
    proxy.freeze()
    proxy.hold()
    await db.sql`update shell.apps set name = 'Two'`
    await waitFor(
      async () => (await reloadsOf(metrics, 'error')) >= 3,
      'three reads giving up during the partition',
      10_000,
    )
    const timeouts = lines.filter((line) => line.error?.code === 'READ_TIMEOUT')
    t.equal(timeouts.length, 1, 'said once, not at every read (db/outage-log.ts)')
    t.equal(appNameOf(feed), 'One', 'the snapshot in service is kept')
    // Healed: new connections pass; the old ones stay silent, as after a lost NAT entry.
    proxy.release()
    await waitFor(() => appNameOf(feed) === 'Two', 'the change once the partition heals', 5_000)
    t.pass('no read waits behind a connection from the partition')
  },
)

t.test(
  'PostgreSQL stopped and started again: the last snapshot is served meanwhile, then changes flow',
  async (t) => {
    const server = await startPrivatePostgres()
    t.teardown(() => server.remove())
    const sql = connectDatabase(server.adminUrl, { max: 2 })
    t.teardown(() => sql.end({ timeout: 1 }))
    await migrateDatabase(sql)
    await sql`insert into shell.apps (app_key, name) values ('crm', 'Before')`
    const { feed, metrics } = startFeed(t, server.adminUrl, server.adminUrl)
    await waitFor(() => appNameOf(feed) === 'Before', 'the first snapshot')
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening')

    await server.stop()
    await waitFor(async () => (await listeningOf(metrics)) === 0, 'the loss noticed')
    feed.requestReload()
    await waitFor(async () => (await reloadsOf(metrics, 'error')) > 0, 'a reload failing')
    t.equal(appNameOf(feed), 'Before', 'the last snapshot is kept')
    t.match(feed.notReadyReason(), /database unavailable/, 'and the reason recorded')

    await server.start()
    const writer = connectDatabase(server.adminUrl, { max: 1 })
    t.teardown(() => writer.end({ timeout: 1 }))
    await writer`update shell.apps set name = 'After'`
    await waitFor(() => appNameOf(feed) === 'After', 'the change after the restart')
    await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening again')
  },
)

t.test(
  'no snapshot and a reason before the first load; the reason names the failure',
  async (t) => {
    const metrics = createMetrics({ defaultMetrics: false })
    // Nothing listens on port 1: every connection is refused.
    const url = 'postgres://nobody:nothing@127.0.0.1:1/none'
    const feed = createSnapshotFeed({ readUrl: url, feedUrl: url, logger: silent, metrics })
    t.equal(feed.notReadyReason(), 'loading the first snapshot')
    feed.start()
    t.teardown(() => feed.close())
    await waitFor(() => feed.notReadyReason().startsWith('database unavailable'), 'a reason')
    t.match(feed.notReadyReason(), /ECONNREFUSED/)
    t.equal(feed.current(), undefined)
    t.equal(await readMetric(metrics.snapshotLoaded), 0)
  },
)

t.test('closing the feed leaves no connection behind', async (t) => {
  const db = await createTestDatabase(t)
  const metrics = createMetrics({ defaultMetrics: false })
  const feed = createSnapshotFeed({ readUrl: db.url, feedUrl: db.url, logger: silent, metrics })
  feed.start()
  await waitFor(async () => (await listeningOf(metrics)) === 1, 'listening')
  await waitFor(() => feed.current() !== undefined, 'the first snapshot')
  t.equal((await feedBackends(db, 'shell-data-reads')).length, 1, 'one connection reads')
  await feed.close()
  await waitFor(
    async () => (await feedBackends(db)).length === 0,
    'the listening connection closed',
  )
  await waitFor(
    async () => (await feedBackends(db, 'shell-data-reads')).length === 0,
    'the read connection closed',
  )
  await sleep(300)
  t.equal(await listeningOf(metrics), 0, 'not listening, and not reconnecting')
})
