import type { Sql } from './connect.js'
import { primaryTimeline } from './server-history.js'

/** A WAL position, in bytes from `0/0`: a bigint compares and subtracts; pg_lsn text does not. */
export type WalPosition = bigint

/** XLOG page headers (access/xlog_internal.h): short on every page, long on a segment's first. */
const SHORT_PAGE_HEADER = 24n
const LONG_PAGE_HEADER = 40n

/** A position on the primary's timeline (server-history.ts): positions compare within one. */
export interface WalTarget {
  readonly timeline: number
  readonly position: WalPosition
}

/**
 * The end of the primary's last inserted record, for a standby's replay position to reach. Not
 * written (`pg_current_wal_lsn()`): with `synchronous_commit=off` a notified commit may not be.
 */
export async function readPrimaryWalTarget(sql: Sql): Promise<WalTarget> {
  const [row] = await sql<{ inserted: string; page: string; segment: string; timeline: number }[]>`
    select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as inserted,
      current_setting('wal_block_size') as page,
      (select setting from pg_settings where name = 'wal_segment_size') as segment,
      ${primaryTimeline(sql)} as timeline`
  if (row === undefined) throw new Error('the primary returned no WAL position')
  const position = findLastRecordEnd(BigInt(row.inserted), BigInt(row.page), BigInt(row.segment))
  return { timeline: row.timeline, position }
}

/** The position alone, for a primary whose history is not in question. */
export async function readPrimaryWalEnd(sql: Sql): Promise<WalPosition> {
  return (await readPrimaryWalTarget(sql)).position
}

/**
 * `pg_current_wal_insert_lsn()` is where the next record goes: past the next page's header when
 * the last record ended on a page boundary, where a standby's replay stops. Uncorrected, a standby
 * that replayed everything would seem behind until the primary writes again.
 */
export function findLastRecordEnd(
  inserted: WalPosition,
  pageBytes: bigint,
  segmentBytes: bigint,
): WalPosition {
  if (inserted % segmentBytes === LONG_PAGE_HEADER) return inserted - LONG_PAGE_HEADER
  if (inserted % pageBytes === SHORT_PAGE_HEADER) return inserted - SHORT_PAGE_HEADER
  return inserted
}

/** What the database the snapshots are read from has replayed; `inRecovery` false: not a standby. */
export interface ReplayState {
  readonly inRecovery: boolean
  /** Null where nothing was ever replayed (a primary that never recovered). */
  readonly replayed: WalPosition | null
  /** Its last restartpoint's timeline: at most the one it replays (server-history.ts). */
  readonly timeline: number
}

/** One cheap query on the standby (DATABASE_URL), polled while a reload waits for it. */
export async function readReplayState(sql: Sql): Promise<ReplayState> {
  const [row] = await sql<{ inRecovery: boolean; replayed: string | null; timeline: number }[]>`
    select pg_is_in_recovery() as "inRecovery",
      (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::text as replayed,
      (select timeline_id from pg_control_checkpoint()) as timeline`
  if (row === undefined) throw new Error('the database returned no replay position')
  return {
    inRecovery: row.inRecovery,
    replayed: row.replayed === null ? null : BigInt(row.replayed),
    timeline: row.timeline,
  }
}

/** `0/14D9578`, as PostgreSQL prints a pg_lsn: for log lines. */
export function formatWalPosition(position: WalPosition): string {
  const high = position >> 32n
  const low = position & 0xffffffffn
  return `${high.toString(16).toUpperCase()}/${low.toString(16).toUpperCase()}`
}
