import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Sql } from '../db/connect.js'
import { databaseErrorFields } from '../db/database-error-fields.js'
import type { Metrics } from '../metrics.js'
import { computeBackoffMs } from './backoff.js'
import { CHANGE_CHANNEL, PROBE_PREFIX, type PrefetchedRead } from './listener-messages.js'
import type { ListenerWorker, ListeningConnection } from './listener-worker.js'

export { CHANGE_CHANNEL } from './listener-messages.js'

/**
 * Fresh listening connections in a row whose probe never came back before
 * LISTEN is taken not to work there (a transaction pooler hands the session
 * that ran it back to its pool): one is a connection that went silent, a
 * second on a new connection is the pattern.
 */
const DEAF_AFTER_SILENT_LISTENS = 2
/**
 * Once LISTEN is taken not to work, it is tried again this seldom (the
 * pooler may be reconfigured), quietly; the feed checks the database on its
 * own meanwhile.
 */
const DEAF_RELISTEN_INTERVAL_MS = 60_000
/**
 * A listener thread lost once is replaced within 100 ms; losses within this
 * long of each other back off further (capped at 10 s), as only a bug stops
 * the thread and it may recur.
 */
const THREAD_LOSS_MEMORY_MS = 10 * 60_000

export interface ChangeListenerOptions {
  /** Pool the probes are sent through. */
  readonly sql: Sql
  /** Session-mode connection string for LISTEN (FEED_DATABASE_URL). */
  readonly feedUrl: string
  /** Holds the listening connection in a thread of its own. */
  readonly worker: ListenerWorker
  readonly logger: Logger
  readonly metrics: Metrics
  /** How often the listening connection is proven alive by a notification round trip. */
  readonly probeIntervalMs?: number
  /** How long a probe may take before the listening connection is declared dead. */
  readonly probeTimeoutMs?: number
  /** A change was committed; `prefetched` holds its rows when they could be read at once. */
  onChange(prefetched?: PrefetchedRead): void
  /** LISTEN is in place; `isReconnect` after the first time (notifications may have been lost). */
  onListen(isReconnect: boolean): void
  onListenError(error: unknown): void
}

export interface ChangeListener {
  start(): void
  /** True once a probe came back on the listening connection, until one does not. */
  isListening(): boolean
  /** Checks the listening connection at once, e.g. after the database failed a reload. */
  probeSoon(): void
  close(): Promise<void>
}

/**
 * The dedicated LISTEN connection on `shell_changed`: reconnected with
 * capped backoff when it fails, and proven alive by a periodic notification
 * round trip through the pool, which catches a silent, half-open connection
 * that postgres.js alone would wait on forever.
 */
export function createChangeListener(options: ChangeListenerOptions): ChangeListener {
  const { sql, feedUrl, logger, metrics } = options
  // A dead listener is noticed within about 5 + 2 s; each probe costs one tiny notification.
  const probeIntervalMs = options.probeIntervalMs ?? 5_000
  const probeTimeoutMs = options.probeTimeoutMs ?? 2_000
  // Set while the pool's probe query goes unanswered, so that a partition is logged once.
  let poolStalled = false
  const instanceId = randomBytes(6).toString('hex')

  let closed = false
  let listenedBefore = false
  let listener: ListeningConnection | undefined
  let listenFailures = 0
  // When threads were lost with a listening connection, within THREAD_LOSS_MEMORY_MS.
  let threadLosses: number[] = []
  let listenTimer: NodeJS.Timeout | undefined
  let probeTimer: NodeJS.Timeout | undefined
  let probeCount = 0
  let probing = false
  // Proven by a probe's round trip, not by LISTEN's answer: a pooler answers LISTEN too.
  let listening = false
  // Fresh listening connections in a row whose probe did not come back.
  let silentListens = 0
  let deaf = false
  let pendingProbe: { payload: string; resolve: () => void } | undefined

  async function connectListener(): Promise<void> {
    listenTimer = undefined
    if (closed) return
    // Whether LISTEN was ever in place on this connection.
    let heard = false
    const client = options.worker.listen(feedUrl, {
      onListen() {
        // Runs after the first LISTEN and after every reconnect postgres.js makes on its own.
        if (!isCurrent()) return
        if (heard) {
          // The driver lost this connection and made a new one on its own: worth a trace,
          // since notifications sent in between are lost (the full reload below reads them).
          logger.warn('the listening connection was lost and reconnected; reading everything again')
        }
        heard = true
        listenFailures = 0
        logger[deaf ? 'debug' : 'info']('LISTEN sent; proving it with a probe')
        const isReconnect = listenedBefore
        listenedBefore = true
        options.onListen(isReconnect)
        scheduleProbe(0)
      },
      onProbe(payload) {
        if (isCurrent() && pendingProbe?.payload === payload) pendingProbe.resolve()
      },
      onChange(prefetched) {
        if (isCurrent()) options.onChange(prefetched)
      },
      onLost() {
        // Lost before LISTEN was in place, the rejected `listening` below retries with
        // backoff. Lost after: a new connection (and thread) without waiting for the probe
        // to find this one silent, backing off by the losses of the last ten minutes, so
        // that a thread that keeps dying is not restarted in a tight loop.
        if (!isCurrent() || !heard) return
        const now = Date.now()
        threadLosses = threadLosses.filter((at) => now - at < THREAD_LOSS_MEMORY_MS)
        threadLosses.push(now)
        const retryInMs = computeBackoffMs(threadLosses.length)
        logger.warn(
          { retryInMs },
          'the listening connection was lost with its thread; reconnecting',
        )
        restartListener(retryInMs)
      },
    })
    listener = client
    const isCurrent = () => listener === client && !closed
    try {
      await client.listening
    } catch (error) {
      if (!isCurrent()) return
      listenFailures += 1
      const retryInMs = computeBackoffMs(listenFailures)
      setListening(false)
      options.onListenError(error)
      logger.warn(
        { ...databaseErrorFields(error), attempt: listenFailures, retryInMs },
        'cannot listen for changes; retrying',
      )
      listener = undefined
      void client.end(0)
      listenTimer = setTimeout(() => void connectListener(), retryInMs)
    }
  }

  function scheduleProbe(delayMs: number): void {
    if (closed || probing) return
    clearTimeout(probeTimer)
    probeTimer = setTimeout(() => void probeListener(), delayMs)
  }

  /** Sends a notification through the pool and expects it back on the listening connection. */
  async function probeListener(): Promise<void> {
    probeTimer = undefined
    if (closed) return
    probing = true
    let nextProbeInMs = probeIntervalMs
    const client = listener
    if (client !== undefined) {
      const payload = `${PROBE_PREFIX}${instanceId}:${probeCount++}`
      let timeout: NodeJS.Timeout | undefined
      const arrived = new Promise<boolean>((resolve) => {
        pendingProbe = { payload, resolve: () => resolve(true) }
        timeout = setTimeout(() => resolve(false), probeTimeoutMs)
      })
      try {
        const notify = sql`select pg_notify(${CHANGE_CHANNEL}, ${payload})`
        let notified = false
        // The deadline bounds the query too: a pool connection that went silent (a network
        // partition) would hold it for as long as TCP does. It is settled, and ignored, later.
        const sent = notify.then(() => {
          notified = true
          return arrived
        })
        sent.catch(() => {})
        const cameBack = await Promise.race([sent, arrived])
        // A listener replaced or closed meanwhile: this probe proves nothing about it.
        const current = listener === client && !closed
        if (current && cameBack) {
          // Proven, also after a failed probe set the gauge to 0 with the listener intact.
          if (!listening) logger.info('listening for changes')
          if (deaf) logger.info('notifications arrive on the listening connection again')
          setListening(true)
          silentListens = 0
          deaf = false
          if (poolStalled) logger.info('the database answers the liveness probe again')
          poolStalled = false
        } else if (current && notified) {
          handleSilentListener()
          nextProbeInMs = 0
        } else if (current) {
          // The pool's probe query itself hangs: reloads would too. Say so once; probe soon.
          if (!poolStalled) {
            logger.warn(
              { timeoutMs: probeTimeoutMs },
              'the database did not answer the liveness probe; changes are not being picked up',
            )
          }
          poolStalled = true
          setListening(false)
          nextProbeInMs = Math.min(probeIntervalMs, 1_000)
        }
      } catch {
        // The database is unreachable through the pool too: the listener is surely down
        // with it. Probe again soon, so that its return is noticed quickly.
        setListening(false)
        nextProbeInMs = Math.min(probeIntervalMs, 1_000)
      } finally {
        clearTimeout(timeout)
        pendingProbe = undefined
      }
    }
    probing = false
    // A listener being replaced is probed once its LISTEN is in place (onlisten).
    if (nextProbeInMs > 0 || listener !== undefined) scheduleProbe(nextProbeInMs || probeIntervalMs)
  }

  /**
   * A notification sent through the pool did not come back. Once, the
   * connection went silent: a new one is made at once. On fresh connections
   * in a row, LISTEN does not work through FEED_DATABASE_URL: said once, then
   * tried again seldom and quietly, while the feed checks the database itself.
   */
  function handleSilentListener(): void {
    setListening(false)
    silentListens += 1
    if (silentListens < DEAF_AFTER_SILENT_LISTENS) {
      logger.warn('the listening connection went silent; reconnecting it')
      restartListener(0)
      return
    }
    if (!deaf) {
      logger.warn(
        { retryInMs: DEAF_RELISTEN_INTERVAL_MS },
        'LISTEN does not work through FEED_DATABASE_URL: notifications never arrive, even on a new connection, as behind a transaction pooler (PgBouncer in transaction mode); point FEED_DATABASE_URL at PostgreSQL or at a session-mode pool. Until then changes are found by checking the database periodically',
      )
    } else {
      logger.debug('notifications still do not arrive on the listening connection')
    }
    deaf = true
    restartListener(DEAF_RELISTEN_INTERVAL_MS)
  }

  function restartListener(delayMs: number): void {
    setListening(false)
    const stale = listener
    listener = undefined
    void stale?.end(0)
    clearTimeout(listenTimer)
    listenTimer = setTimeout(() => void connectListener(), delayMs)
  }

  function setListening(proven: boolean): void {
    listening = proven
    metrics.feedListening.set(proven ? 1 : 0)
  }

  return {
    start() {
      void connectListener()
      scheduleProbe(probeIntervalMs)
    },
    isListening: () => listening,
    probeSoon: () => scheduleProbe(0),
    async close() {
      closed = true
      clearTimeout(listenTimer)
      clearTimeout(probeTimer)
      pendingProbe?.resolve()
      setListening(false)
      const client = listener
      listener = undefined
      await client?.end(1)
    },
  }
}

/** A short, safe description: the SQLSTATE or socket error code, never a connection string. */
export function describeDatabaseError(error: unknown): string {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown error'
}
