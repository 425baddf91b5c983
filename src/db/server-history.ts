import type postgres from './postgres-driver.js'

/**
 * A select-list entry naming the history of the server a query runs on, as
 * `<system identifier>/<timeline>`: transaction ids (the watermark, sql/005_change_xids.sql)
 * and WAL positions compare only within one history.
 *
 * A promotion starts a new timeline, and after a failover that lost commits (asynchronous
 * replication) the new primary hands out again the transaction ids and positions the old one had
 * given to the lost commits: the same numbers for other changes (revisions are ids no server
 * draws again: sql/008_revision_ids.sql). A new cluster (a restore from pg_dump) has a system
 * identifier of its own, and transaction ids of its own.
 *
 * On a primary the timeline is the current WAL file's (its first 8 hex digits): right from the
 * promotion on. `pg_control_checkpoint()` would say the old timeline until the promotion's
 * checkpoint ends, seconds later (test/feed/failover-lost-commits.test.ts checks which it is), while the new
 * primary already takes commits. A standby cannot name its WAL file (SQLSTATE 55000): it says its
 * last restartpoint's timeline, which may lag behind the timeline it replays; a standby that
 * follows a promoted primary without being rewound replays the same history up to the switch,
 * so the lag hides no lost commit. Every function here is open to a role without privileges.
 */
export function selectHistory(sql: SqlOrTransaction): postgres.PendingQuery<postgres.Row[]> {
  return sql`(select system_identifier::text from pg_control_system()) || '/' || (
      case when pg_is_in_recovery() then (select timeline_id from pg_control_checkpoint())
      else ${primaryTimeline(sql)} end
    )::text as history`
}

/** A primary's current timeline, an int; refused on a standby. */
export function primaryTimeline(sql: SqlOrTransaction): postgres.PendingQuery<postgres.Row[]> {
  return sql`('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::int`
}

type SqlOrTransaction = postgres.Sql | postgres.TransactionSql
