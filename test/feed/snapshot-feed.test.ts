import { Worker } from 'node:worker_threads'
import pino from 'pino'
import t, { type Test } from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import postgres from '../../src/db/postgres-driver.js'
import { spawnListenerThread } from '../../src/feed/listener-worker.js'
import {
  createSnapshotFeed,
  type SnapshotFeed,
  type SnapshotFeedOptions,
} from '../../src/feed/snapshot-feed.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { buildSnapshot } from '../../src/snapshot/build.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { createTestDatabase } from '../helpers/database.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'

const silent = pino({ level: 'silent' })

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * A started feed on `sql`, closed at teardown, with a count of successful
 * reloads. `sql` connects to `feedUrl` unless `overrides.databaseUrl` says otherwise.
 */
function startFeed(
  t: Teardown,
  sql: postgres.Sql,
  feedUrl: string,
  overrides: Partial<SnapshotFeedOptions> = {},
): { feed: SnapshotFeed; metrics: Metrics; reloads: () => Promise<number> } {
  const metrics = createMetrics({ defaultMetrics: false })
  const feed = createSnapshotFeed({
    sql,
    databaseUrl: feedUrl,
    feedUrl,
    logger: silent,
    metrics,
    ...overrides,
  })
  feed.start()
  t.teardown(() => feed.close())
  const reloads = async () => {
    const metric = await metrics.snapshotReloads.get()
    return metric.values.find((value) => value.labels.result === 'success')?.value ?? 0
  }
  return { feed, metrics, reloads }
}

async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return condition()
}

/** The shell body one caller would get, parsed. */
function renderShell(
  snapshot: Snapshot | undefined,
  appKey: string,
  roles: string[] = [],
): unknown {
  const variant = snapshot?.app(appKey)?.variant(roles, 'en')
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

t.test('under load, the next request takes a change the listener thread read', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const { feed, metrics, reloads } = startFeed(t, db.sql, db.url)
  const listening = async () => (await metrics.feedListening.get()).values[0]?.value
  t.ok(await waitUntil(async () => (await listening()) === 1), 'listening')
  // The reload that follows LISTEN is over by now: the thread has the revisions in service.
  await new Promise((resolve) => setTimeout(resolve, 200))
  const durations = async () => {
    const { values } = await metrics.snapshotReloadDuration.get()
    const read = (suffix: string) =>
      values.find(
        (value) => value.metricName === `shell_snapshot_reload_duration_seconds_${suffix}`,
      )?.value ?? 0
    return { count: read('count'), sum: read('sum') }
  }
  const before = await durations()
  const reloadsBefore = await reloads()
  await db.sql`update shell.apps set name = 'Two'`
  let turned = false
  setImmediate(() => {
    turned = true
  })
  // As requests under saturating load: each asks for the snapshot, and only microtasks
  // run between them. The event loop does not turn, so the database's answers cannot
  // reach this thread: the change can only come in read by the listener thread.
  const deadline = performance.now() + 5_000
  while (shellOf(feed)?.app.name !== 'Two' && performance.now() < deadline) await null
  t.equal(shellOf(feed)?.app.name, 'Two', 'the change is served')
  t.equal(turned, false, 'without a turn of the event loop')
  // The contract's reload metrics count this reload as any other, its read included.
  t.equal(await reloads(), reloadsBefore + 1, 'one successful reload counted')
  const after = await durations()
  t.equal(after.count, before.count + 1, 'its duration observed')
  t.ok(after.sum > before.sum, 'with a positive duration')
})

t.test('a listener thread that dies is replaced at once, and a full reload follows', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const threads: Worker[] = []
  const { feed, metrics, reloads } = startFeed(t, db.sql, db.url, {
    // No probe within the test: only the thread's exit can set the replacement off.
    probeIntervalMs: 60_000,
    spawnListenerThread(data, transferList) {
      const thread = spawnListenerThread(data, transferList)
      threads.push(thread)
      return thread
    },
  })
  const listening = async () => (await metrics.feedListening.get()).values[0]?.value
  t.ok(await waitUntil(async () => (await listening()) === 1), 'listening')
  const before = await reloads()
  await threads[0]?.terminate()
  t.ok(await waitUntil(() => threads.length === 2), 'a second thread')
  t.ok(await waitUntil(async () => (await reloads()) > before), 'a reload after the new LISTEN')
  await db.sql`update shell.apps set name = 'Two'`
  t.ok(await waitUntil(() => shellOf(feed)?.app.name === 'Two'), 'changes flow again')
})

t.test('a listener thread that cannot start is retried with backoff, not in a loop', async (t) => {
  const db = await createTestDatabase(t)
  let spawned = 0
  const { feed } = startFeed(t, db.sql, db.url, {
    spawnListenerThread(data, transferList) {
      spawned += 1
      // Dies at once, as a thread whose module fails to load would.
      return new Worker('process.exit(1)', { eval: true, workerData: data, transferList })
    },
  })
  t.ok(await waitUntil(() => feed.current() !== undefined), 'the snapshot loads all the same')
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  // Backoff from 10 to 100 ms, doubling: at most about seven tries in 1.5 s; a loop makes dozens.
  t.ok(spawned >= 2 && spawned <= 10, `${spawned} threads started in 1.5 s`)
})

t.test('each kind of change on each table reaches the snapshot', async (t) => {
  const db = await createTestDatabase(t)
  const { feed } = startFeed(t, db.sql, db.url)
  t.ok(await waitUntil(() => feed.current() !== undefined), 'first snapshot')
  t.equal(feed.current()?.appKeys.length, 0)

  const steps: Array<[string, (sql: postgres.Sql) => Promise<unknown>, () => boolean]> = [
    [
      'insert app',
      (sql) => sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`,
      () => shellOf(feed)?.app.name === 'CRM',
    ],
    [
      'update app',
      (sql) => sql`update shell.apps set name = 'CRM 2'`,
      () => shellOf(feed)?.app.name === 'CRM 2',
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
        sql`insert into shell.menu_role_grants (menu_item_id, role) select id, 'r' from shell.menu_items`,
      () => sidebarLabels(feed)?.join() === '' && sidebarLabels(feed, ['r'])?.join() === 'A2',
    ],
    [
      'update grant',
      (sql) => sql`update shell.menu_role_grants set role = 's'`,
      () =>
        sidebarLabels(feed, ['r'])?.join() === '' && sidebarLabels(feed, ['s'])?.join() === 'A2',
    ],
    [
      'delete grant',
      (sql) => sql`delete from shell.menu_role_grants`,
      () => sidebarLabels(feed)?.join() === 'A2',
    ],
    [
      'delete item',
      (sql) => sql`delete from shell.menu_items`,
      () => sidebarLabels(feed)?.join() === '',
    ],
    [
      'delete app',
      (sql) => sql`delete from shell.apps`,
      () => feed.current()?.app('crm') === undefined,
    ],
  ]
  for (const [name, change, seen] of steps) {
    const started = performance.now()
    await change(db.sql)
    t.ok(await waitUntil(seen), `${name} reaches the snapshot`)
    t.comment(`${name}: ${(performance.now() - started).toFixed(1)} ms from COMMIT to snapshot`)
  }
})

t.test(
  'a burst of 200 commits ends in a correct snapshot after a handful of reloads',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
    const { feed, reloads } = startFeed(t, db.sql, db.url)
    t.ok(await waitUntil(() => feed.current() !== undefined))
    const before = await reloads()
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
    t.ok(
      await waitUntil(() => sidebarLabels(feed)?.length === 200),
      'all 200 items in the snapshot',
    )
    t.equal(sidebarLabels(feed)?.[199], 'Item 199')
    await new Promise((resolve) => setTimeout(resolve, 200))
    const used = (await reloads()) - before
    t.comment(`${used} reloads for 200 commits`)
    t.ok(used >= 1 && used <= 20, `a handful of reloads, not 200 (got ${used})`)
  },
)

t.test('a change committed during a reload causes one more reload and is not lost', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'Before')`
  let builds = 0
  let committedDuringReload = false
  const { feed } = startFeed(t, db.sql, db.url, {
    async build(rows) {
      builds += 1
      // The rows of this reload are read; commit a change before the reload finishes.
      if (builds === 2) {
        await db.sql`update shell.apps set name = 'After'`
        committedDuringReload = true
      }
      return buildSnapshot(rows)
    },
  })
  t.ok(await waitUntil(() => feed.current() !== undefined))
  await db.sql`update shell.apps set name = 'Middle'`
  t.ok(await waitUntil(() => committedDuringReload))
  t.ok(
    await waitUntil(() => shellOf(feed)?.app.name === 'After'),
    'the change made during the reload is served',
  )
})

t.test(
  'the listening connection killed by pg_terminate_backend: a change after it is picked up',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
    const lines: { level: number; msg: string }[] = []
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    )
    const { feed, metrics } = startFeed(t, db.sql, db.url, { logger })
    t.ok(await waitUntil(() => feed.current() !== undefined))
    t.ok(
      await waitUntil(async () => (await metrics.feedListening.get()).values[0]?.value === 1),
      'listening',
    )
    const terminated = await db.sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = ${db.name} and application_name = 'shell-data-feed'`
    t.equal(terminated.length, 1, 'one listening connection terminated')
    await db.sql`update shell.apps set name = 'Two'`
    t.ok(
      await waitUntil(() => shellOf(feed)?.app.name === 'Two'),
      'the change is in the snapshot after the reconnect',
    )
    t.ok(
      await waitUntil(() =>
        lines.some((line) => line.level === 40 && /lost and reconnected/.test(line.msg)),
      ),
      'the reconnect is logged as a warning',
    )
  },
)

t.test(
  'a reload whose connection is terminated mid-read fails, keeps the snapshot, and the next succeeds',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
    const { feed, metrics, reloads } = startFeed(t, db.sql, db.url)
    t.ok(await waitUntil(async () => (await metrics.feedListening.get()).values[0]?.value === 1))
    t.ok(
      await waitUntil(async () => (await reloads()) >= 2),
      "the listening connection's own reload passed",
    )
    const loaded = feed.current()
    // A second session holds the apps table, so the next reload waits inside its transaction.
    const other = postgres(db.url, { max: 1, onnotice: () => {} })
    t.teardown(() => other.end({ timeout: 1 }))
    const locker = await other.reserve()
    t.teardown(() => locker.release())
    await locker`begin`
    await locker`lock table shell.apps in access exclusive mode`
    feed.requestReload()
    let waiting: { pid: number }[] = []
    t.ok(
      await waitUntil(async () => {
        // Not through the locker: inside its transaction pg_stat_activity stays as first read.
        waiting = await db.sql<{ pid: number }[]>`
          select pid from pg_stat_activity
          where datname = ${db.name} and wait_event_type = 'Lock' and pid <> pg_backend_pid()`
        return waiting.length === 1
      }),
      'the reload waits on the lock',
    )
    // Terminating it fails the read; postgres.js then writes its own ROLLBACK on the
    // closed connection, which threw from a timer before patches/postgres+3.4.9.patch.
    await locker`select pg_terminate_backend(${waiting[0]?.pid ?? 0})`
    await locker`rollback`
    const failed = async () =>
      (await metrics.snapshotReloads.get()).values.find((v) => v.labels.result === 'error')?.value
    t.ok(await waitUntil(async () => ((await failed()) ?? 0) >= 1), 'the reload failed')
    t.equal(feed.current(), loaded, 'the snapshot in service is kept')
    await db.sql`update shell.apps set name = 'Two'`
    t.ok(await waitUntil(() => shellOf(feed)?.app.name === 'Two'), 'the pool recovers')
  },
)

t.test('a silent, half-open listening connection is detected and replaced', async (t) => {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const { hostname, port } = new URL(db.url)
  const proxy = await startTcpProxy(hostname, Number(port))
  t.teardown(() => proxy.close())
  const { feed } = startFeed(t, db.sql, proxy.route(db.url), {
    databaseUrl: db.url,
    probeIntervalMs: 200,
    probeTimeoutMs: 300,
  })
  t.ok(await waitUntil(() => feed.current() !== undefined))
  await new Promise((resolve) => setTimeout(resolve, 300))
  proxy.freeze()
  await db.sql`update shell.apps set name = 'Two'`
  t.ok(
    await waitUntil(() => shellOf(feed)?.app.name === 'Two'),
    'the change arrives through a new listening connection',
  )
})

/** A feed whose pool goes through a TCP proxy while its listening connection does not. */
async function startFeedWithProxiedPool(t: Test) {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'One')`
  const target = new URL(db.url)
  const proxy = await startTcpProxy(target.hostname, Number(target.port))
  t.teardown(() => proxy.close())
  // One connection: nothing to route around the fault with.
  const pool = connectDatabase(proxy.route(db.url), { max: 1 })
  t.teardown(() => pool.end({ timeout: 1 }))
  const lines: { level: number; msg: string; error?: { code?: string } }[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  const started = startFeed(t, pool, db.url, {
    databaseUrl: proxy.route(db.url),
    logger,
    probeIntervalMs: 200,
    probeTimeoutMs: 300,
    reloadTimeoutMs: 1_000,
  })
  const listening = async () => (await started.metrics.feedListening.get()).values[0]?.value
  t.ok(await waitUntil(async () => (await listening()) === 1), 'listening')
  return { ...started, db, proxy, lines, listening }
}

t.test(
  'a pool that stops answering: the probe says so once, reloads give up and retry, then recover',
  async (t) => {
    const { proxy, db, feed, metrics, lines, listening } = await startFeedWithProxiedPool(t)
    // A first change opens the listener thread's read connection, which the freeze then holds too.
    await db.sql`update shell.apps set name = 'One again'`
    t.ok(await waitUntil(() => shellOf(feed)?.app.name === 'One again'), 'a change before')
    proxy.freeze()
    t.ok(await waitUntil(async () => (await listening()) === 0, 5_000), 'no longer listening')
    // A change: its reload waits on the silent connection until the deadline.
    await db.sql`update shell.apps set name = 'Two'`
    const timedOut = () =>
      lines.filter((line) => line.error?.code === 'RELOAD_TIMEOUT' && line.level === 40).length
    t.ok(await waitUntil(() => timedOut() >= 1, 5_000), 'the reload gave up at its deadline')
    const errors = (await metrics.snapshotReloads.get()).values.find(
      (value) => value.labels.result === 'error',
    )
    t.ok((errors?.value ?? 0) >= 1, 'counted as a failed reload')
    const stalled = lines.filter((line) => /did not answer the liveness probe/.test(line.msg))
    t.equal(stalled.length, 1, 'one warning for the whole stall')
    // The silent connections are reset; new ones get through.
    proxy.cut()
    t.ok(await waitUntil(async () => (await listening()) === 1, 10_000), 'listening again')
    t.ok(lines.some((line) => /answers the liveness probe again/.test(line.msg)))
    t.ok(await waitUntil(() => shellOf(feed)?.app.name === 'Two'), 'the change arrives')
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
    const { feed, metrics } = startFeed(t, sql, server.adminUrl, {
      probeIntervalMs: 300,
      probeTimeoutMs: 300,
    })
    t.ok(await waitUntil(() => shellOf(feed)?.app.name === 'Before'))

    await server.stop()
    feed.requestReload()
    const failed = await waitUntil(async () => {
      const metric = await metrics.snapshotReloads.get()
      return (metric.values.find((value) => value.labels.result === 'error')?.value ?? 0) > 0
    })
    t.ok(failed, 'a reload failed while the database was down')
    t.equal(shellOf(feed)?.app.name, 'Before', 'the last snapshot is kept')

    await server.start()
    const writer = connectDatabase(server.adminUrl, { max: 1 })
    t.teardown(() => writer.end({ timeout: 1 }))
    await writer`update shell.apps set name = 'After'`
    t.ok(
      await waitUntil(() => shellOf(feed)?.app.name === 'After', 30_000),
      'a change after the restart reaches the snapshot',
    )
    t.ok(
      await waitUntil(async () => (await metrics.feedListening.get()).values[0]?.value === 1),
      'listening again',
    )
  },
)

t.test(
  'no snapshot and a reason before the first load; the reason names the failure',
  async (t) => {
    const metrics = createMetrics({ defaultMetrics: false })
    // Nothing listens on port 1: every connection is refused.
    const url = 'postgres://nobody:nothing@127.0.0.1:1/none'
    const sql = connectDatabase(url, { max: 1 })
    t.teardown(() => sql.end({ timeout: 0 }))
    const feed = createSnapshotFeed({
      sql,
      databaseUrl: url,
      feedUrl: url,
      logger: silent,
      metrics,
    })
    t.equal(feed.notReadyReason(), 'loading the first snapshot')
    feed.start()
    t.teardown(() => feed.close())
    t.ok(await waitUntil(() => feed.notReadyReason().startsWith('database unavailable')))
    t.match(feed.notReadyReason(), /ECONNREFUSED/)
    t.equal(feed.current(), undefined)
    t.equal((await metrics.snapshotLoaded.get()).values[0]?.value, 0)
  },
)

t.test(
  'a change to one app reads and builds that app only; after a reconnect, everything',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
    await db.sql`
    insert into shell.menu_items (app_key, item_key, zone, label)
    values ('crm', 'a', 'sidebar', 'A'), ('hr', 'b', 'sidebar', 'B')`
    const reads: { items: string[]; unchanged: string[] }[] = []
    const { feed, metrics } = startFeed(t, db.sql, db.url, {
      build(rows, options) {
        reads.push({
          items: rows.menuItems.map((item) => item.appKey).sort(),
          unchanged: [...(options.unchangedApps ?? [])].sort(),
        })
        return buildSnapshot(rows, options)
      },
    })
    t.ok(await waitUntil(() => feed.current()?.appKeys.length === 2))
    t.same(reads[0], { items: ['crm', 'hr'], unchanged: [] }, 'the first load reads everything')
    // The first LISTEN asks for a reload of its own (by revision: nothing moved, nothing is
    // read whole); let it pass, so that the next read is the one the update causes.
    t.ok(await waitUntil(async () => (await metrics.feedListening.get()).values[0]?.value === 1))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const hrView = feed.current()?.app('hr')
    await db.sql`update shell.menu_items set label = 'A2' where app_key = 'crm'`
    t.ok(await waitUntil(() => sidebarLabels(feed)?.join() === 'A2'))
    t.same(reads.at(-1), { items: ['crm'], unchanged: ['hr'] }, 'only crm was read')
    t.equal(feed.current()?.app('hr'), hrView, 'hr was taken over as it was')

    const before = reads.length
    await db.sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = ${db.name} and application_name = 'shell-data-feed'`
    t.ok(await waitUntil(() => reads.length > before), 'a reload after the reconnect')
    t.same(reads[before], { items: ['crm', 'hr'], unchanged: [] }, 'which reads everything')
  },
)
