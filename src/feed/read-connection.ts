import { connectDatabase, type Sql } from '../db/connect.js'
import { withDeadline } from '../db/with-deadline.js'

/**
 * Far above what a read of 5,000 apps needs (bench/README.md, "scale"): a read running longer
 * waits on a connection gone silent (a partition), which is then ended.
 */
const READ_TIMEOUT_MS = 30_000

/** The connection the feed reads the database through (DATABASE_URL). */
export interface ReadConnection {
  /**
   * Runs `read`; past `deadlineMs` (the connection's own by default) it rejects with code READ_TIMEOUT and ends the connection it
   * runs on, so the next read gets a new one. In a silent network partition a cancel request
   * would not arrive either, and a query left running would hold its connection until TCP gives
   * up, minutes later.
   */
  run<T>(read: (sql: Sql) => Promise<T>, deadlineMs?: number): Promise<T>
  close(): Promise<void>
}

/**
 * One connection: the feed reads one thing at a time (a reload, a check, a standby's position),
 * and a connection that stops answering must be ended, which a pool cannot do for one of its own.
 * `primaryOnly`, asked before each read: only a primary will do (an instance that reads the
 * primary, until standby mode); when the answer changes the connection is made again.
 */
export function createReadConnection(
  url: string,
  options: { primaryOnly(): boolean; readonly deadlineMs?: number | undefined },
): ReadConnection {
  const { primaryOnly } = options
  let primary = primaryOnly()
  const connect = () =>
    connectDatabase(url, { max: 1, applicationName: 'shell-data-reads', primary })
  let sql = connect()
  let closed = false
  return {
    async run(read, deadlineMs = options.deadlineMs ?? READ_TIMEOUT_MS) {
      if (closed) throw new Error('the read connection is closed')
      if (primaryOnly() !== primary) {
        primary = !primary
        void sql.end({ timeout: 0 })
        sql = connect()
      }
      const current = sql
      return withDeadline(read(current), deadlineMs, () => {
        if (sql === current && !closed) sql = connect()
        // Its socket is destroyed at once; the query fails with it.
        void current.end({ timeout: 0 })
      })
    },
    async close() {
      closed = true
      // A read in flight is given up: the next start reads again.
      await sql.end({ timeout: 1 })
    },
  }
}
