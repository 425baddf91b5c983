import type { Logger } from 'pino'
import { computeBackoffMs } from '../db/backoff.js'
import { connectDatabase, describeHosts, type Sql } from '../db/connect.js'
import { databaseErrorFields, isServerInRecovery } from '../db/database-errors.js'
import { createOutageLog } from '../db/outage-log.js'
import type { Metrics } from '../metrics.js'

/** The channel the schema's triggers notify (sql/001_schema.sql). */
const CHANGE_CHANNEL = 'shell_changed'

/**
 * Found deaf this often in a row, nothing heard in between, LISTEN is taken not to work (as
 * behind a transaction pooler): once is a connection gone silent, twice on fresh ones the pattern.
 */
const DEAF_IN_A_ROW = 2
/**
 * LISTEN taken not to work, or refused by a hot standby past STANDBY_MODE_AFTER_MS, is tried again
 * this seldom, quietly (the feed's check follows the database meanwhile, and each new LISTEN
 * costs a full reload).
 */
const RELISTEN_SELDOM_MS = 60_000
/**
 * A server in recovery where the address should lead to the primary is left and the address tried
 * again this often (jittered down to half): a failover's new primary, or a Service that still
 * leads to the old one for a moment, is found within a second or two (docs/operations.md,
 * "Failover"); a connection a second per instance costs a standby nothing.
 */
const RECOVERY_RETRY_MS = 1_000
/**
 * Only servers in recovery for this long, the address is taken to name a standby on purpose
 * (Reading from a standby, without FEED_DATABASE_URL): LISTEN is then tried once a minute. Longer
 * than any failover's promotion; short enough that such an instance is ready within a minute.
 */
const STANDBY_MODE_AFTER_MS = 60_000

/**
 * What the address led to, as the attempts found it:
 * - `primary`: LISTEN took (or nothing was found yet, at the start);
 * - `inRecovery`: only servers in recovery since `since`; tried again every RECOVERY_RETRY_MS;
 * - `standbyMode`: only those for STANDBY_MODE_AFTER_MS; tried again once a minute, and the reads
 *   of an instance without FEED_DATABASE_URL go to the standby (snapshot-feed.ts).
 */
type ServerFound =
  | { readonly name: 'primary' }
  | { readonly name: 'inRecovery'; readonly since: number; readonly server: string }
  | { readonly name: 'standbyMode'; readonly server: string }

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
  /** LISTEN is in place and not found deaf (true), or no longer (false). */
  onListening(listening: boolean): void
  /** Only servers in recovery for this long: standby mode. STANDBY_MODE_AFTER_MS by default. */
  readonly standbyModeAfterMs?: number | undefined
  /** The clock (ms) for the outage's log and the standby mode's minute; tests pass their own. */
  readonly now?: (() => number) | undefined
}

export interface ListeningConnection {
  /**
   * How many reloads it has announced: notifications, and each LISTEN put in place (which asks
   * for a full one). Two readings tell whether any came between.
   */
  announcedCount(): number
  /** A committed change was not announced: the connection is dropped and made again. */
  recycleDeaf(): void
  /** Only servers in recovery for a minute: the address names a standby, not the primary. */
  inStandbyMode(): boolean
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
  const now = options.now ?? Date.now
  const standbyModeAfterMs = options.standbyModeAfterMs ?? STANDBY_MODE_AFTER_MS
  const outage = createOutageLog({
    logger,
    now,
    messages: {
      down: 'cannot listen for changes; retrying within a second, quietly (shell_database_attempts_total counts the attempts)',
      still: 'still cannot listen for changes; retrying',
      back: 'the listening connection reaches the database again',
    },
  })
  let found: ServerFound = { name: 'primary' }
  let client: Sql | undefined
  let reconnectTimer: NodeJS.Timeout | undefined
  let failures = 0
  let announced = 0
  let listening = false
  let deafInARow = 0
  let closed = false

  function connect(): void {
    reconnectTimer = undefined
    if (closed) return
    const connection: Sql = connectDatabase(url, {
      max: 1,
      applicationName: 'shell-data-feed',
      primary: true,
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
        metrics.databaseAttempts.inc({ task: 'listen', result: 'success' })
        outage.succeeded()
        findPrimary()
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
    if (isServerInRecovery(error)) {
      metrics.databaseAttempts.inc({ task: 'listen', result: 'in_recovery' })
      outage.succeeded()
      options.onListenFailed(error)
      reconnectAfter(findInRecovery(error))
      return
    }
    failures += 1
    const retryInMs = computeBackoffMs(failures)
    if (listening) {
      // A loss, not an attempt: the attempts to listen again are counted as they fail.
      logger.warn(
        { ...databaseErrorFields(error), retryInMs },
        'the listening connection was lost; reconnecting, then reading everything again',
      )
    } else {
      metrics.databaseAttempts.inc({ task: 'listen', result: 'error' })
      outage.failed({ ...databaseErrorFields(error), retryInMs })
      options.onListenFailed(error)
    }
    reconnectAfter(retryInMs)
  }

  /**
   * The server the address led to is in recovery: said when it starts, then tried again within a
   * second, quietly, for a minute; past it, standby mode. The delay before the next attempt.
   */
  function findInRecovery(error: unknown): number {
    const server = serverOf(error)
    switch (found.name) {
      case 'primary':
        found = { name: 'inRecovery', since: now(), server }
        logger.warn(
          { ...databaseErrorFields(error), server, retryInMs: RECOVERY_RETRY_MS },
          `the server at ${server} is in recovery (a hot standby), where LISTEN needs the primary: leaving it and trying the address again every second (a failover in progress, or a Service not yet moved); after ${Math.round(standbyModeAfterMs / 1000)} s of this, once a minute`,
        )
        return jitter(RECOVERY_RETRY_MS)
      case 'inRecovery':
        if (now() - found.since < standbyModeAfterMs) return jitter(RECOVERY_RETRY_MS)
        found = { name: 'standbyMode', server }
        logger.warn(
          { ...databaseErrorFields(error), server, retryInMs: RELISTEN_SELDOM_MS },
          `cannot LISTEN: the server at ${server} has been a hot standby for ${Math.round(standbyModeAfterMs / 1000)} s, which refuses it; set FEED_DATABASE_URL to the primary so that changes arrive within the standby lag. Until then snapshots are read from the standby, changes are found by checking the database every second, and LISTEN is tried again once a minute`,
        )
        return RELISTEN_SELDOM_MS
      case 'standbyMode':
        logger.debug(
          { server, retryInMs: RELISTEN_SELDOM_MS },
          'LISTEN refused again: still a standby',
        )
        return RELISTEN_SELDOM_MS
    }
  }

  /** LISTEN took: a primary answers; said when servers in recovery were found before. */
  function findPrimary(): void {
    switch (found.name) {
      case 'primary':
        return
      case 'inRecovery':
      case 'standbyMode': {
        const server = describeHosts(url)
        logger.info(
          { server, inRecoveryBefore: found.server },
          `a primary answers at ${server}: listening there`,
        )
        found = { name: 'primary' }
        return
      }
    }
  }

  /** The server an error came from (the driver names it), else the address's hosts. */
  function serverOf(error: unknown): string {
    const { address, port } = error as { address?: unknown; port?: unknown }
    return typeof address === 'string' ? `${address}:${String(port)}` : describeHosts(url)
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
    if (listening === value) return
    listening = value
    metrics.feedListening.set(value ? 1 : 0)
    options.onListening(value)
  }

  connect()
  return {
    inStandbyMode: () => found.name === 'standbyMode',
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

/** Between half and all of `ms`, so that the instances do not all connect at once. */
function jitter(ms: number): number {
  return Math.round(ms * (0.5 + 0.5 * Math.random()))
}
