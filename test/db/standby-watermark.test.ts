/**
 * The xid watermark of incremental reads (sql/005_change_xids.sql) on a
 * real hot standby. pg_current_xact_id() cannot run there; the reads use
 * pg_current_snapshot(), whose xmin on a standby is the oldest transaction
 * that the replayed WAL shows running. The case the watermark exists for: a
 * transaction that commits after a later one, so that a read sees the later
 * one's change and not its own. On the standby, as on the primary, that
 * read's watermark is at or below the open transaction's id, and the next
 * incremental read and check find its change.
 */
import t from 'tap'
import { readRevisionsChangedSince } from '../../src/db/read-snapshot-rows.js'
import { readAllRows, readRowsChangedSince } from '../helpers/read-rows.js'
import { createReplicatedDatabase, startStreamingReplica } from '../helpers/streaming-replica.js'

const replica = await startStreamingReplica()
t.teardown(() => replica.remove())

t.test('pg_current_xact_id() is refused on a standby; the reads never call it', async (t) => {
  const db = await createReplicatedDatabase(t, replica)
  await t.rejects(db.standby`select pg_current_xact_id()`, { code: '25006' })
  const read = await readAllRows(db.standby)
  t.equal(read.fromStandby, true, 'a full read says it came from a standby')
  t.match(read.watermark, /^\d+$/, 'with a watermark')
})

t.test(
  'a transaction that commits after a later one is found by the next read on the standby',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    await db.primary`insert into shell.apps (app_key, name) values ('one', 'One'), ('two', 'Two')`
    await replica.caughtUp()

    // The earlier transaction changes `one` and stays open...
    let commitEarlier: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      commitEarlier = resolve
    })
    let opened: (xid: string) => void = () => {}
    const earlierOpen = new Promise<string>((resolve) => {
      opened = resolve
    })
    const earlier = db.primary.begin(async (tx) => {
      await tx`update shell.apps set name = 'One, later' where app_key = 'one'`
      const [row] = await tx<{ xid: string }[]>`select pg_current_xact_id()::text as xid`
      opened(row?.xid ?? '')
      await held
    })
    t.teardown(() => {
      commitEarlier()
      return earlier
    })
    const earlierXid = await earlierOpen
    // ...while a later one changes `two` and commits.
    const [later] = await db.primary.begin(async (tx) => {
      await tx`update shell.apps set name = 'Two, later' where app_key = 'two'`
      return tx<{ xid: string }[]>`select pg_current_xact_id()::text as xid`
    })
    t.ok(BigInt(later?.xid ?? 0) > BigInt(earlierXid), 'the later transaction has the higher id')
    await replica.caughtUp()

    const first = await readAllRows(db.standby)
    const names = (read: typeof first) =>
      Object.fromEntries(read.rows.apps.map((app) => [app.appKey, app.name]))
    t.match(names(first), { one: 'One', two: 'Two, later' }, 'the standby shows the later commit')
    t.ok(
      BigInt(first.watermark) <= BigInt(earlierXid),
      `the watermark (${first.watermark}) is at or below the open transaction (${earlierXid}), as replayed`,
    )
    const quiet = await readRevisionsChangedSince(db.standby, first.watermark)
    t.notOk(quiet.revisions.has('one'), 'nothing of `one` to find while it is open')

    commitEarlier()
    await earlier
    await replica.caughtUp()
    const check = await readRevisionsChangedSince(db.standby, first.watermark)
    t.ok(check.revisions.has('one'), 'the check on the standby finds `one` changed')
    t.equal(check.fromStandby, true)
    const next = await readRowsChangedSince(db.standby, first.watermark)
    t.equal(names(next).one, 'One, later', 'the incremental read on the standby reads it')
    t.ok(
      BigInt(next.watermark) > BigInt(earlierXid),
      'and its watermark moves past it, once nothing older is running',
    )
  },
)
