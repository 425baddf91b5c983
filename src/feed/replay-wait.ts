import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Sql } from '../db/connect.js'
import { databaseErrorFields } from '../db/database-errors.js'
import {
  formatWalPosition,
  type ReplayState,
  readPrimaryWalTarget,
  readReplayState,
  type WalTarget,
} from '../db/wal-positions.js'
import { withDeadline } from '../db/with-deadline.js'
import type { Metrics } from '../metrics.js'

/**
 * The longest a reload waits for the standby (docs/operations.md, "A primary and its standbys"):
 * one further behind is read as it is, and the check finds the change once it is replayed.
 */
const REPLAY_WAIT_MAX_MS = 10_000
/**
 * Polls 10 ms apart, doubling to 100 ms: a lag of milliseconds is read within milliseconds, one of
 * a second costs about ten small queries, and a change is served within the lag plus 100 ms.
 */
const POLL_FIRST_MS = 10
const POLL_CAP_MS = 100

export interface ReplayWaitOptions {
  /** Runs a query, within a deadline, where snapshots are read (DATABASE_URL): the standby. */
  readonly onStandby: <T>(read: (sql: Sql) => Promise<T>, deadlineMs: number) => Promise<T>
  /** Runs a query on the primary, through the listening connection (FEED_DATABASE_URL). */
  readonly onPrimary: <T>(read: (sql: Sql) => Promise<T>) => Promise<T>
  readonly logger: Logger
  readonly metrics: Metrics
  /** Ends a wait at once (the feed closes). */
  readonly signal: AbortSignal
  /** Default 10 s (REPLAY_WAIT_MAX_MS). */
  readonly maxWaitMs?: number | undefined
}

export interface ReplayWait {
  /**
   * Resolves once the standby has replayed the primary's WAL as far as it was inserted at the
   * call, or after 10 s at most; never rejects (the next read reports a database that is gone).
   * `fromStandby`, the last read's: false skips it all, undefined (none yet) asks the database.
   */
  untilReplayed(fromStandby: boolean | undefined): Promise<void>
  /** Since a wait gave up, until one succeeds: the standby lags more than the wait allows. */
  isBehind(): boolean
}

/**
 * The feed's **Waiting for a standby** state (snapshot-feed.ts): the primary's WAL position, then
 * the standby polled until it is there. `shell_feed_replay_wait_seconds` observes every wait on a
 * standby, zero included, and nothing else.
 */
export function createReplayWait(options: ReplayWaitOptions): ReplayWait {
  const { onStandby, onPrimary, logger, metrics, signal } = options
  const maxWaitMs = options.maxWaitMs ?? REPLAY_WAIT_MAX_MS
  let behind = false

  async function untilReplayed(fromStandby: boolean | undefined): Promise<void> {
    if (fromStandby === false || signal.aborted) return
    const startedAt = performance.now()
    const remainingMs = () => Math.max(startedAt + maxWaitMs - performance.now(), 0)
    try {
      // Nothing read yet: a database that is not a standby is not asked about a primary.
      if (fromStandby === undefined) {
        const first = await onStandby(readReplayState, maxWaitMs)
        if (!first.inRecovery) return
      }
      const target = await withDeadline(onPrimary(readPrimaryWalTarget), remainingMs())
      for (let attempt = 1; !signal.aborted; attempt += 1) {
        // The last poll, when the time is up, still gets an answer's time.
        const state = await onStandby(readReplayState, Math.max(remainingMs(), POLL_CAP_MS))
        // Promoted, or never a standby: everything it holds is there to read.
        if (!state.inRecovery) return
        // The primary answering is one the standby has left (a failover): its position, of the
        // old timeline, says nothing of what the standby replayed, and may never be reached.
        if (state.timeline > target.timeline) return
        const caughtUp = state.replayed !== null && state.replayed >= target.position
        if (caughtUp || remainingMs() === 0) {
          record(startedAt, { caughtUp, target, state })
          return
        }
        const delayMs = Math.min(POLL_FIRST_MS * 2 ** (attempt - 1), POLL_CAP_MS, remainingMs())
        await sleep(delayMs, undefined, { signal }).catch(() => {})
      }
    } catch (error) {
      // The primary or the standby did not answer: read as it is; the read reports the standby.
      logger.debug(databaseErrorFields(error), 'cannot wait for the standby to replay')
    }
  }

  function record(
    startedAt: number,
    outcome: { caughtUp: boolean; target: WalTarget; state: ReplayState },
  ): void {
    metrics.feedReplayWait.observe((performance.now() - startedAt) / 1000)
    if (outcome.caughtUp === !behind) return
    behind = !outcome.caughtUp
    if (outcome.caughtUp) {
      logger.info('the standby replays the primary within the wait again')
      return
    }
    const { target, state } = outcome
    logger.warn(
      {
        primaryWalEnd: formatWalPosition(target.position),
        standbyReplayed: state.replayed === null ? null : formatWalPosition(state.replayed),
        behindBytes: state.replayed === null ? null : Number(target.position - state.replayed),
        waitedMs: maxWaitMs,
      },
      `the standby in DATABASE_URL has not replayed a notified commit within ${maxWaitMs / 1000} s; reading it as it is: the check every second serves the change once it is replayed`,
    )
  }

  return { untilReplayed, isBehind: () => behind }
}
