/**
 * Closing the feed (a shutdown) with a reload under way: a reload the close gives up is no failed
 * reload (no warn line, no `shell_snapshot_reloads_total{result="error"}`), and one that finishes
 * while the feed closes is put in service before the close resolves, so the snapshot file writer,
 * which closes after the feed, writes it.
 */
import pino from 'pino'
import t from 'tap'
import { createSnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { readMetric } from '../helpers/metrics.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { waitFor } from '../helpers/wait.js'

interface LogLine {
  readonly level: number
  readonly msg: string
}

function recordingLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  return { logger, lines }
}

const reloadsOf = (metrics: Metrics, result: 'success' | 'error') =>
  readMetric(metrics.snapshotReloads, { result })

/** The feed's connections still open on the test database. */
async function feedConnections(db: TestDatabase): Promise<number> {
  const [row] = await db.sql<{ count: number }[]>`
    select count(*)::int as count from pg_stat_activity
    where datname = ${db.name} and application_name in ('shell-data-reads', 'shell-data-feed')`
  return row?.count ?? 0
}

t.test('a reload the shutdown gives up is not a failed reload', async (t) => {
  const db = await createTestDatabase(t)
  const proxy = await startTcpProxy('127.0.0.1', Number(new URL(db.url).port))
  t.teardown(() => proxy.close())
  const metrics = createMetrics({ defaultMetrics: false })
  const { logger, lines } = recordingLogger()
  const feed = createSnapshotFeed({
    readUrl: proxy.route(db.url),
    feedUrl: db.url,
    logger,
    metrics,
  })
  t.teardown(() => feed.close())
  feed.start()
  await waitFor(() => feed.current() !== undefined, 'the first snapshot')
  // Its read goes unanswered: the close ends it.
  proxy.freeze()
  feed.requestReload()
  await feed.close()
  t.equal(await reloadsOf(metrics, 'error'), 0, 'no failed reload counted')
  t.same(
    lines.filter((line) => line.level >= 40).map((line) => line.msg),
    [],
    'and no warning',
  )
})

t.test('a reload that finishes while the feed closes is put in service first', async (t) => {
  const db = await createTestDatabase(t)
  const metrics = createMetrics({ defaultMetrics: false })
  let hold: Promise<void> | undefined
  let release = () => {}
  let held = false
  const feed = createSnapshotFeed({
    readUrl: db.url,
    feedUrl: db.url,
    logger: pino({ level: 'silent' }),
    metrics,
    // Held: the read that found the change below (an incremental one, with crm in it).
    onRead: async (read) => {
      if (hold === undefined || read.complete || !read.appKeys.includes('crm')) return
      held = true
      await hold
    },
  })
  t.teardown(() => feed.close())
  feed.start()
  await waitFor(() => feed.current() !== undefined, 'the first snapshot')
  const events: string[] = []
  feed.onSwap(() => events.push('swapped'))
  hold = new Promise((resolve) => {
    release = resolve
  })
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM at shutdown')`
  await waitFor(() => held, 'a reload read, and held before it is put in service')
  const closed = feed.close().then(() => events.push('closed'))
  // The connections are closed; the reload's read is done, its snapshot not yet in service.
  await waitFor(async () => (await feedConnections(db)) === 0, 'the connections closed')
  // A close that did not wait for the reload resolves about now; one that waits cannot.
  await waitFor(() => events.includes('closed'), 'a close that does not wait', 2_000).catch(
    () => {},
  )
  release()
  await closed
  t.same(events, ['swapped', 'closed'], 'in service before the close resolves')
  t.equal(await reloadsOf(metrics, 'error'), 0)
})
