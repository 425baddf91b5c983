import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { type AdminAppDeps, buildAdminApp } from './admin-app.js'
import { buildApp } from './app.js'
import {
  LOCAL_AUDIENCE,
  type LocalIssuer,
  loadLocalIssuer,
  localIssuerUrl,
  recordLocalIssuer,
} from './auth/local-issuer.js'
import { createTokenVerifier, type TokenVerifier } from './auth/verify-token.js'
import { type Config, localOidcConfig } from './config/config.js'
import { openSchemaTargets, prepareSchemaThenStartFeed } from './database-preparation.js'
import { connectDatabase, type Sql } from './db/connect.js'
import { findFreePort } from './embedded/embedded.js'
import {
  type DatabaseLocation,
  LOCAL_DATA_DIR,
  locateDatabase,
} from './embedded/locate-database.js'
import { openSnapshotFeed } from './feed/open-snapshot-feed.js'
import type { SnapshotFeed } from './feed/snapshot-feed.js'
import { listenAt } from './http/listen-at.js'
import type { StandingQueue } from './http/standing-queue.js'
import { logDemoCurlOnFirstSnapshot } from './local-demo-log.js'
import { createMetrics, type Metrics } from './metrics.js'
import { createReleasers, type Releasers } from './releasers.js'
import { buildCaller, type Caller } from './snapshot/caller.js'

/**
 * Connections the kernel holds for the process to accept. Node's default, 511, drops the SYNs of a
 * storm of new connections, which come back 1, 3 and 7 s later in waves that fill the queue
 * again; libuv takes one per turn of the event loop. The kernel caps it at net.core.somaxconn
 * (4,096 since Linux 5.4).
 */
const LISTEN_BACKLOG = 4_096

export interface Service {
  readonly app: FastifyInstance
  readonly feed: SnapshotFeed
  readonly metrics: Metrics
  /** `http://host:port` the service listens on. */
  readonly url: string
  /** `http://host:port` of ADMIN_PORT (the probes and /metrics); undefined when it is unset. */
  readonly adminUrl: string | undefined
  readonly localIssuer: LocalIssuer | undefined
  /** Resolves once the database is migrated (and seeded) and the feed is started. */
  readonly started: Promise<void>
  /**
   * SIGTERM's shutdown: /readyz answers 503 at once, every route serves on for `delayMs` (so
   * that load balancers stop sending first), then it drains and closes as `close()` does.
   */
  shutdown(options: { readonly delayMs: number }): Promise<void>
  /**
   * Drains and closes everything at once, in reverse order of creation (streams, listener,
   * requests in flight, feed, pool, embedded PostgreSQL). Called again, the same promise.
   */
  close(): Promise<void>
}

export interface ServiceOptions {
  /** Where local mode keeps its key pair; `.data/` by default. */
  readonly dataDir?: string
  /** Defaults to a registry of its own with the process metrics. */
  readonly metrics?: Metrics
  /** How long the drain waits for open connections; DRAIN_DEADLINE_MS by default. */
  readonly drainDeadlineMs?: number
  /** When the API's excess is shed; default: http/standing-queue.ts (tests force it). */
  readonly standingQueue?: StandingQueue
  /** How often the snapshot file records a newer confirmation; the writer's default (a minute). */
  readonly snapshotFileConfirmIntervalMs?: number
  /**
   * Aborted by a signal during the start: what was started is stopped (the embedded database
   * too) and the start rejects with the signal's reason.
   */
  readonly signal?: AbortSignal
  /** Only servers in recovery for this long: standby mode (a minute; tests shorten it). */
  readonly standbyModeAfterMs?: number
  /** The clock (ms) of the outages' log lines; tests pass their own to see a minute pass. */
  readonly now?: () => number
}

/**
 * The start, in order; each resource's cleanup is added the moment it exists, and they are
 * released in reverse:
 * 1. `openDatabase`: DATABASE_URL, or the embedded PostgreSQL when it is unset, and its pool;
 * 2. `openIdentity`: the local issuer (local mode) and the token verifier;
 * 3. `openSnapshotFeed`: the snapshot file read and the feed made from it, not started;
 * 4. `listen`: ADMIN_PORT, then PORT, so that probes answer while the database is prepared;
 * 5. in the background, `prepareSchemaThenStartFeed` (database-preparation.ts): migrations and
 *    seeds, then the feed started; the snapshot file is served meanwhile if the database fails.
 */
export async function startService(
  config: Config,
  logger: Logger,
  options: ServiceOptions = {},
): Promise<Service> {
  const start: Start = {
    config,
    logger,
    options,
    metrics: options.metrics ?? createMetrics(),
    releasers: createReleasers(logger),
    signal: options.signal ?? new AbortController().signal,
    shuttingDown: false,
  }
  try {
    const database = await openDatabase(start)
    const identity = await openIdentity(start)
    const feedUrl = config.feedDatabaseUrl ?? database.url
    const { feed, stored } = await openSnapshotFeed({
      ...start,
      readUrl: database.url,
      feedUrl,
      dataDir: options.dataDir ?? LOCAL_DATA_DIR,
      confirmIntervalMs: options.snapshotFileConfirmIntervalMs,
      standbyModeAfterMs: options.standbyModeAfterMs,
      now: options.now,
    })
    const schema = openSchemaTargets(
      database.sql,
      { readUrl: database.url, feedUrl },
      start.releasers,
    )
    const http = await listen(start, { feed, identity })
    const preparing = new AbortController()
    start.releasers.add('database preparation', () => preparing.abort())
    const started = prepareSchemaThenStartFeed({
      config,
      logger,
      sql: database.sql,
      schema,
      embedded: database.embedded,
      feed,
      stored: stored !== undefined,
      signal: preparing.signal,
      metrics: start.metrics,
      now: options.now,
    })
    started.catch(() => {})
    if (identity.localIssuer !== undefined) {
      logDemoCurlOnFirstSnapshot(feed, identity.localIssuer, http.url, logger)
    }
    return runningService(start, { ...http, feed, localIssuer: identity.localIssuer, started })
  } catch (error) {
    await start.releasers.releaseAll()
    throw error
  }
}

/** What every step of the start shares. */
interface Start {
  readonly config: Config
  readonly logger: Logger
  readonly options: ServiceOptions
  readonly metrics: Metrics
  readonly releasers: Releasers
  /** A signal during the start: the step under way ends and what was started is released. */
  readonly signal: AbortSignal
  /** Set by a shutdown: /readyz answers 503 from then on. */
  shuttingDown: boolean
}

async function openDatabase(start: Start): Promise<DatabaseLocation & { readonly sql: Sql }> {
  const location = await locateDatabase(start.config.databaseUrl, start.logger)
  start.releasers.add('database server', () => location.stop())
  start.signal.throwIfAborted()
  const sql = connectDatabase(location.url)
  start.releasers.add('database pool', () => sql.end({ timeout: 5 }))
  return { ...location, sql }
}

interface Identity {
  readonly verifier: TokenVerifier<Caller>
  readonly localIssuer: LocalIssuer | undefined
  /** PORT as listened on: local mode needs it before listening, as the issuer tokens name. */
  readonly port: number
}

async function openIdentity({
  config,
  logger,
  metrics,
  options,
  releasers,
}: Start): Promise<Identity> {
  const dataDir = options.dataDir ?? LOCAL_DATA_DIR
  const port = config.oidc === null && config.port === 0 ? await findFreePort() : config.port
  const localIssuer =
    config.oidc === null
      ? await loadLocalIssuer({ dataDir, issuer: localIssuerUrl(config.host, port) })
      : undefined
  if (localIssuer !== undefined) await recordLocalIssuer(dataDir, localIssuer.issuer)
  const verifier = createTokenVerifier({
    oidc: config.oidc ?? localOidcConfig(localIssuer?.issuer ?? '', LOCAL_AUDIENCE),
    toCaller: buildCaller,
    cacheMax: config.tokenCacheMax,
    failureLog: config.authFailureLog,
    logger,
    metrics,
  })
  releasers.add('token verifier', () => verifier.close())
  return { verifier, localIssuer, port }
}

/**
 * ADMIN_PORT's instance (admin-app.ts) first, so that it closes after the API's: probes and
 * scrapes are answered through the API's drain. Then the API on PORT.
 */
async function listen(
  start: Start,
  parts: {
    readonly feed: SnapshotFeed
    readonly identity: Identity
  },
): Promise<{
  readonly app: FastifyInstance
  readonly url: string
  readonly adminUrl: string | undefined
}> {
  const { config, logger, releasers, options } = start
  // What both ports' instances share: the same readiness, the same registry.
  const shared: AdminAppDeps = {
    logger,
    metrics: start.metrics,
    snapshots: parts.feed,
    logRequests: config.logRequests,
    isShuttingDown: () => start.shuttingDown,
    drainDeadlineMs: options.drainDeadlineMs,
  }
  let adminUrl: string | undefined
  if (config.adminPort !== null) {
    const admin = buildAdminApp(shared)
    releasers.add('admin http server', () => admin.close())
    // Node's default backlog: a probe or a scrape now and then, from a few peers.
    adminUrl = await listenAt(admin, { host: config.host, port: config.adminPort })
  }
  const { verifier, localIssuer, port } = parts.identity
  const app = buildApp({
    ...shared,
    verifier,
    corsOrigins: config.corsOrigins,
    eventStreamsMax: config.eventStreamsMax,
    standingQueue: options.standingQueue,
    metricsOnAdminPort: adminUrl !== undefined,
    ...(localIssuer === undefined ? {} : { localIssuer }),
  })
  releasers.add('http server', () => app.close())
  const url = await listenAt(app, { port, host: config.host, backlog: LISTEN_BACKLOG })
  start.signal.throwIfAborted()
  if (adminUrl === undefined) logger.info({ url }, `listening on ${url}`)
  else logger.info({ url, adminUrl }, `listening on ${url}, probes and /metrics on ${adminUrl}`)
  return { app, url, adminUrl }
}

/** The service as started: its shutdown and close release what the start made. */
function runningService(
  start: Start,
  parts: Pick<Service, 'app' | 'url' | 'adminUrl' | 'feed' | 'localIssuer' | 'started'>,
): Service {
  const { logger, releasers } = start
  // Closing at once ends a shutdown's delay too.
  const delay = new AbortController()
  const close = () => {
    start.shuttingDown = true
    delay.abort()
    return releasers.releaseAll()
  }
  return {
    ...parts,
    metrics: start.metrics,
    async shutdown({ delayMs }) {
      start.shuttingDown = true
      if (delayMs > 0) {
        logger.info(
          { delayMs },
          `/readyz answers 503; serving on for ${delayMs / 1000} s, then draining`,
        )
        await sleep(delayMs, undefined, { signal: delay.signal }).catch(() => {})
      }
      if (!delay.signal.aborted) {
        logger.info('draining: event streams end, the listener closes, requests in flight finish')
      }
      await close()
    },
    close,
  }
}
