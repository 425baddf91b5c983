import type { Logger } from 'pino'
import { computeBackoffMs } from '../db/backoff.js'
import { connectDatabase, type Sql } from '../db/connect.js'
import { databaseErrorFields } from '../db/database-errors.js'
import type { Metrics } from '../metrics.js'

/** The channel the schema's triggers notify (sql/001_schema.sql). */
const CHANGE_CHANNEL = 'shell_changed'

/**
 * Found deaf this often in a row, nothing heard in between, LISTEN is taken not to work (as
 * behind a transaction pooler): once is a connection gone silent, twice on fresh ones the pattern.
 */
const DEAF_IN_A_ROW = 2
/**
 * LISTEN taken not to work, or refused by a hot standby, is tried again this seldom, quietly (the
 * feed's check follows the database meanwhile, and each new LISTEN costs a full reload).
 */
const RELISTEN_SELDOM_MS = 60_000
/** read_only_sql_transaction: how a hot standby refuses LISTEN ("cannot execute LISTEN during recovery"). */
const REFUSED_IN_RECOVERY = '25006'

export interface ListeningConnectionOptions {
  /** FEED_DATABASE_URL: a session-mode connection string. */
  readonly url: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** LISTEN is in place: the first time, and after each reconnect (notifications may have been lost). */
  onListen(): void
  onNotify(): void
  /** LISTEN could not be put in place; it is retried. */
  onListenFailed(error: unknown): void
}

export interface ListeningConnection {
  /** True while LISTEN is in place and the connection has not been found deaf. */
  isListening(): boolean
  /**
   * How many reloads it has announced: notifications, and each LISTEN put in place (which asks
   * for a full one). Two readings tell whether any came between.
   */
  announcedCount(): number
  /** A committed change was not announced: the connection is dropped and made again. */
  recycleDeaf(): void
  /** Runs a query on this connection (the primary's position, for a standby to reach); rejects while there is none. */
  withConnection<T>(read: (sql: Sql) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/**
 * The dedicated LISTEN connection, as graphile-worker's `listenForChanges`: on any loss it is
 * dropped and made again after a capped, jittered backoff (db/backoff.ts). Not the driver's own
 * re-LISTEN: it swallows its error while the database is down. A connection that is half-open or
 * behind a transaction pooler cannot tell; the feed's check finds it and calls `recycleDeaf`.
 */
export function startListening(options: ListeningConnectionOptions): ListeningConnection {
  const { url, logger, metrics } = options
  let client: Sql | undefined
  let reconnectTimer: NodeJS.Timeout | undefined
  let failures = 0
  let announced = 0
  let listening = false
  let deafInARow = 0
  // LISTEN was refused by a hot standby, and that was said.
  let refusedInRecovery = false
  let closed = false

  function connect(): void {
    reconnectTimer = undefined
    if (closed) return
    const connection: Sql = connectDatabase(url, {
      max: 1,
      applicationName: 'shell-data-feed',
      listening: {
        onNotify(channel) {
          if (connection !== client || channel !== CHANGE_CHANNEL) return
          announced += 1
          if (deafInARow > 0) {
            if (deafInARow >= DEAF_IN_A_ROW) logger.info('notifications arrive again')
            deafInARow = 0
            setListening(true)
          }
          options.onNotify()
        },
        onClose: () => lose(connection, new Error('the listening connection closed')),
      },
    })
    client = connection
    connection`listen shell_changed`.then(
      () => {
        if (connection !== client) return
        failures = 0
        if (refusedInRecovery) logger.info('the database takes LISTEN now: no longer a standby')
        refusedInRecovery = false
        // Once taken not to work, LISTEN's answer proves nothing: only a notification does.
        setListening(deafInARow < DEAF_IN_A_ROW)
        logger[deafInARow >= DEAF_IN_A_ROW ? 'debug' : 'info']('listening for changes')
        announced += 1
        options.onListen()
      },
      (error: unknown) => lose(connection, error),
    )
  }

  /** Whatever ended it first (the LISTEN failing, the connection closing), it is dropped once. */
  function lose(connection: Sql, error: unknown): void {
    if (connection !== client || closed) return
    if ((error as { code?: unknown }).code === REFUSED_IN_RECOVERY) {
      refuseInRecovery(error)
      return
    }
    failures += 1
    const retryInMs = computeBackoffMs(failures)
    logger.warn(
      { ...databaseErrorFields(error), attempt: failures, retryInMs },
      listening
        ? 'the listening connection was lost; reconnecting, then reading everything again'
        : 'cannot listen for changes; retrying',
    )
    if (!listening) options.onListenFailed(error)
    reconnectAfter(retryInMs)
  }

  /** A hot standby refuses LISTEN until promoted: said once, then tried again quietly. */
  function refuseInRecovery(error: unknown): void {
    if (!refusedInRecovery) {
      logger.warn(
        { ...databaseErrorFields(error), retryInMs: RELISTEN_SELDOM_MS },
        'cannot LISTEN: the database is a hot standby, which refuses it; set FEED_DATABASE_URL to the primary so that changes arrive within the standby lag. Until then changes are found by checking the database every second, and LISTEN is tried again once a minute',
      )
    } else {
      logger.debug({ retryInMs: RELISTEN_SELDOM_MS }, 'LISTEN refused again: still a standby')
    }
    refusedInRecovery = true
    options.onListenFailed(error)
    reconnectAfter(RELISTEN_SELDOM_MS)
  }

  function reconnectAfter(delayMs: number): void {
    setListening(false)
    const stale = client
    client = undefined
    void stale?.end({ timeout: 0 })
    clearTimeout(reconnectTimer)
    reconnectTimer = setTimeout(connect, delayMs)
  }

  function setListening(value: boolean): void {
    listening = value
    metrics.feedListening.set(value ? 1 : 0)
  }

  connect()
  return {
    isListening: () => listening,
    announcedCount: () => announced,
    recycleDeaf() {
      if (closed || client === undefined) return
      deafInARow += 1
      if (deafInARow < DEAF_IN_A_ROW) {
        logger.warn(
          'a committed change was not announced: the listening connection went silent; reconnecting',
        )
        reconnectAfter(0)
        return
      }
      if (deafInARow === DEAF_IN_A_ROW) {
        logger.warn(
          { retryInMs: RELISTEN_SELDOM_MS },
          'LISTEN does not work through FEED_DATABASE_URL: notifications never arrive, even on a new connection, as behind a transaction pooler (PgBouncer in transaction mode); point FEED_DATABASE_URL at PostgreSQL or at a session-mode pool. Until then changes are found by checking the database every second',
        )
      }
      reconnectAfter(RELISTEN_SELDOM_MS)
    },
    withConnection(read) {
      return client === undefined
        ? Promise.reject(new Error('the listening connection is being made again'))
        : read(client)
    },
    async close() {
      closed = true
      clearTimeout(reconnectTimer)
      setListening(false)
      const last = client
      client = undefined
      await last?.end({ timeout: 1 })
    },
  }
}
