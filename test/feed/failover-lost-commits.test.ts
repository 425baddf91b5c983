/**
 * A failover that lost commits the instance had served, on real servers: a
 * primary and its streaming standby, replication through a proxy the test
 * cuts, the primary stopped, the standby promoted (`pg_promote()`), and a
 * proxy in front that plays the `-rw` Service (it switches its upstream to
 * the new primary and cuts the open connections). The instance must then
 * serve exactly the new primary's data, whatever revisions it hands out
 * again (db/server-history.ts). Each case first checks its own set-up: that
 * the commit was really lost, and that the revision really was reused.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import type { Sql } from '../../src/db/connect.js'
import postgres from '../../src/db/postgres-driver.js'
import { selectHistory } from '../../src/db/server-history.js'
import { createSnapshotFeed, type SnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics } from '../../src/metrics.js'
import { snapshotAgeSeconds } from '../helpers/metrics.js'
import { createReplicatedDatabase, startCuttableReplica } from '../helpers/streaming-replica.js'
import { startSwitchingProxy } from '../helpers/switching-proxy.js'
import { waitFor } from '../helpers/wait.js'
import { callerWith } from '../snapshot/rows.js'

/**
 * Revisions the lost transaction draws before its change: more than a sequence logs ahead of
 * its last value (32, SEQ_LOG_VALS in PostgreSQL), so that the standby's sequence is behind the
 * lost revision and the new primary can hand that very revision out again.
 */
const LOST_DRAWS = 100
/** Transactions lost after that commit: the new primary's next ones reuse their ids. */
const LOST_XIDS = 10

/** The name of `appKey` in the snapshot in service. */
function appNameOf(feed: SnapshotFeed, appKey: string): string | undefined {
  const variant = feed.current()?.app(appKey)?.variant(callerWith([]), 'en')
  const head = variant?.head.toString()
  return head === undefined ? undefined : JSON.parse(`${head}null}`).app.name
}

/** The key of `appKey`'s view in service: its ETag's source. */
function viewOf(feed: SnapshotFeed, appKey: string): string | undefined {
  const snapshot = feed.current()
  return snapshot?.viewKey(appKey)
}

async function historyOf(sql: Sql): Promise<string | undefined> {
  const [row] = await sql<{ history: string }[]>`select ${selectHistory(sql)}`
  return row?.history
}

async function revisionOf(sql: Sql, appKey: string): Promise<string | undefined> {
  const [row] = await sql<{ revision: string }[]>`
    select revision::text as revision from shell.app_revisions where app_key = ${appKey}`
  return row?.revision
}

async function nameOf(sql: Sql, appKey: string): Promise<string | undefined> {
  const [row] = await sql<{ name: string }[]>`select name from shell.apps where app_key = ${appKey}`
  return row?.name
}

/**
 * Up to the failover: `crm` served as "Before" (replicated) and then as "Lost" (committed while
 * replication was cut, so the standby never has it); the primary stopped, the standby promoted,
 * `onNewPrimary` run there, and then the `-rw` proxy switched to it (the instance meets the new
 * primary with its commits made). Returns the feed and a pool on the new primary.
 */
async function failOverLosingACommit(
  t: Test,
  onNewPrimary: (newPrimary: Sql, lostRevision: string) => Promise<void> = async () => {},
  options: { listen: boolean } = { listen: true },
) {
  const replica = await startCuttableReplica(t)
  const db = await createReplicatedDatabase(t, replica)
  await db.primary`insert into shell.apps (app_key, name) values ('hr', 'HR')`
  await db.primary`update shell.apps set name = 'Before' where app_key = 'crm'`
  await replica.caughtUp()

  const rw = await startSwitchingProxy(replica.primary.port)
  t.teardown(() => rw.close())
  const logger = pino({ level: 'silent' })
  const feed = createSnapshotFeed({
    readUrl: rw.route(db.primaryUrl),
    // Port 1: refused, so the check every second alone follows the database.
    feedUrl: options.listen ? rw.route(db.primaryUrl) : 'postgres://postgres:test@127.0.0.1:1/none',
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
  })
  feed.start()
  t.teardown(() => feed.close())
  await waitFor(() => appNameOf(feed, 'crm') === 'Before', 'the replicated commit served')
  const hrView = viewOf(feed, 'hr')
  const historyBefore = await historyOf(db.primary)

  // Replication cut: the standby's connection reset, its attempts to connect again held.
  replica.cutReplication()
  await db.primary.begin(async (tx) => {
    await tx`select nextval('shell.app_revision_seq') from generate_series(1, ${LOST_DRAWS})`
    await tx`update shell.apps set name = 'Lost' where app_key = 'crm'`
  })
  const lostRevision = (await revisionOf(db.primary, 'crm')) ?? ''
  // Transaction ids the new primary hands out again: the instance's watermark is above them.
  for (let lost = 0; lost < LOST_XIDS; lost += 1) await db.primary`select pg_current_xact_id()`
  await waitFor(() => appNameOf(feed, 'crm') === 'Lost', 'the commit to be lost, served')
  const [{ lostXmin } = { lostXmin: '' }] = await db.primary<{ lostXmin: string }[]>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as "lostXmin"`
  const lostAt = Date.now()
  await waitFor(
    () => snapshotAgeSeconds(feed) * 1000 < Date.now() - lostAt,
    'a check to confirm the snapshot (and move its watermark) past the lost transactions',
  )
  // What the instance's file holds now (Persisted snapshot): its revisions are the lost history's.
  const lostSnapshot = feed.current()
  await db.primary.end()
  await replica.primary.stop()

  const onStandby = postgres(db.standbyUrl, { max: 1, onnotice: () => {} })
  t.teardown(() => onStandby.end({ timeout: 1 }))
  t.equal(
    await nameOf(onStandby, 'crm'),
    'Before',
    'set-up: the standby never received the lost commit',
  )
  await onStandby`select pg_promote(true)`
  t.not(await historyOf(onStandby), historyBefore, 'the new primary tells a new history at once')
  t.equal(await nameOf(onStandby, 'crm'), 'Before', 'set-up: the new primary lacks the lost commit')
  await onNewPrimary(onStandby, lostRevision)
  rw.switchTo(replica.standby.port)
  return {
    feed,
    newPrimary: onStandby,
    hrView,
    lostSnapshot,
    lostXmin,
    url: rw.route(db.primaryUrl),
  }
}

t.test('a lost commit is no longer served: the new primary data is', async (t) => {
  const { feed, newPrimary, hrView } = await failOverLosingACommit(t)
  await waitFor(
    () => appNameOf(feed, 'crm') === 'Before',
    () => `the new primary's crm, not the lost commit's (serving ${appNameOf(feed, 'crm')})`,
  )
  t.equal(await nameOf(newPrimary, 'crm'), 'Before')
  t.equal(viewOf(feed, 'hr'), hrView, 'an app the failover left alone keeps its ETag')
})

t.test(
  'a lost commit is not served when the new primary hands its revision to other content',
  async (t) => {
    const failover = await failOverLosingACommit(t, async (newPrimary, lostRevision) => {
      // Draws what the old primary drew in the lost transaction but the last two: the update's
      // bump draws two more (its insert's default, then its update: sql/005_change_xids.sql).
      await newPrimary`
        select nextval('shell.app_revision_seq')
        from generate_series(1, ${lostRevision}::bigint - 2 - (select last_value from shell.app_revision_seq))`
      await newPrimary`update shell.apps set name = 'After' where app_key = 'crm'`
      t.equal(
        await revisionOf(newPrimary, 'crm'),
        lostRevision,
        'set-up: the new primary gives the lost revision to other content',
      )
    })
    const { feed, hrView, lostSnapshot, url } = failover
    await waitFor(
      () => appNameOf(feed, 'crm') === 'After',
      () => `the new primary's crm at the lost revision (serving ${appNameOf(feed, 'crm')})`,
    )
    t.equal(viewOf(feed, 'hr'), hrView, 'an app the failover left alone keeps its ETag')

    // An instance that starts from a file written before the failover.
    if (lostSnapshot === undefined) throw new Error('no snapshot served the lost commit')
    const restarted = createSnapshotFeed({
      readUrl: url,
      feedUrl: url,
      logger: pino({ level: 'silent' }),
      metrics: createMetrics({ defaultMetrics: false }),
      stored: { snapshot: lostSnapshot, confirmedAt: lostSnapshot.loadedAt, maxAgeMs: 60_000 },
    })
    restarted.start()
    t.teardown(() => restarted.close())
    await waitFor(
      () => restarted.origin() === 'database',
      'the restarted instance to read the database',
    )
    t.equal(
      appNameOf(restarted, 'crm'),
      'After',
      'its file of the lost history is compared by content',
    )
  },
)

t.test(
  'with no LISTEN, the check finds a commit of the new primary whose transaction id was lost',
  async (t) => {
    const { feed, newPrimary, lostXmin } = await failOverLosingACommit(t, async () => {}, {
      listen: false,
    })
    const [{ xid } = { xid: '' }] = await newPrimary<{ xid: string }[]>`
      update shell.apps set name = 'After' where app_key = 'crm'
      returning pg_current_xact_id()::text as xid`
    t.ok(
      BigInt(xid) < BigInt(lostXmin),
      `set-up: its id (${xid}) is below the watermark (${lostXmin})`,
    )
    await waitFor(
      () => appNameOf(feed, 'crm') === 'After',
      () => `the check to find the new primary's commit (serving ${appNameOf(feed, 'crm')})`,
    )
  },
)
