import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
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
import { createTokenVerifier } from './auth/verify-token.js'
import { type Config, localOidcConfig } from './config/config.js'
import {
  createPreparation,
  openSchemaTargets,
  prepareDatabaseThenFeed,
} from './database-preparation.js'
import { connectDatabase } from './db/connect.js'
import { readMigrationFiles } from './db/migrate.js'
import { findFreePort } from './embedded/embedded.js'
import { LOCAL_DATA_DIR, locateDatabase } from './embedded/locate-database.js'
import { createSnapshotFeed, type SnapshotFeed } from './feed/snapshot-feed.js'
import { listenAt } from './http/listen-at.js'
import type { StandingQueue } from './http/standing-queue.js'
import { logDemoCurlOnFirstSnapshot } from './local-demo-log.js'
import { createMetrics, type Metrics } from './metrics.js'
import { createReleasers, type Releasers } from './releasers.js'
import { buildCaller } from './snapshot/caller.js'
import { readSnapshotFile, type StoredSnapshot } from './snapshot-file/read-snapshot-file.js'
import { startSnapshotFileWriter } from './snapshot-file/snapshot-file-writer.js'

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
 * Starts the database (embedded when DATABASE_URL is unset), the listener (so probes answer
 * meanwhile), migrations, seeds, then the feed; each resource's cleanup is added as it exists.
 */
export async function startService(
  config: Config,
  logger: Logger,
  options: ServiceOptions = {},
): Promise<Service> {
  const releasers = createReleasers(logger)
  let shuttingDown = false
  const startSignal = options.signal ?? new AbortController().signal
  try {
    const metrics = options.metrics ?? createMetrics()
    const dataDir = options.dataDir ?? LOCAL_DATA_DIR
    const location = await locateDatabase(config.databaseUrl, logger)
    releasers.add('database server', () => location.stop())
    startSignal.throwIfAborted()
    const sql = connectDatabase(location.url)
    releasers.add('database pool', () => sql.end({ timeout: 5 }))

    // Local mode needs its own address before listening: it is the issuer tokens name.
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

    const feedUrl = config.feedDatabaseUrl ?? location.url
    const { feed, stored } = await openSnapshotFeed(config, logger, {
      readUrl: location.url,
      feedUrl,
      dataDir,
      metrics,
      releasers,
      options,
    })
    const schema = openSchemaTargets(sql, { readUrl: location.url, feedUrl }, releasers)
    const preparation = createPreparation()
    // What both ports' instances share: the same readiness, the same registry.
    const httpDeps: AdminAppDeps = {
      logger,
      metrics,
      snapshots: preparation.explain(feed),
      logRequests: config.logRequests,
      isShuttingDown: () => shuttingDown,
      drainDeadlineMs: options.drainDeadlineMs,
    }
    const adminUrl =
      config.adminPort === null
        ? undefined
        : await listenOnAdminPort(
            { host: config.host, port: config.adminPort },
            httpDeps,
            releasers,
          )
    const app = buildApp({
      ...httpDeps,
      verifier,
      corsOrigins: config.corsOrigins,
      eventStreamsMax: config.eventStreamsMax,
      standingQueue: options.standingQueue,
      metricsOnAdminPort: adminUrl !== undefined,
      ...(localIssuer === undefined ? {} : { localIssuer }),
    })
    releasers.add('http server', () => app.close())
    const url = await listenAt(app, { port, host: config.host, backlog: LISTEN_BACKLOG })
    startSignal.throwIfAborted()
    if (adminUrl === undefined) logger.info({ url }, `listening on ${url}`)
    else logger.info({ url, adminUrl }, `listening on ${url}, probes and /metrics on ${adminUrl}`)

    releasers.add('database preparation', () => preparation.abort())
    const started = prepareDatabaseThenFeed({
      config,
      logger,
      sql,
      schema,
      embedded: location.embedded,
      feed,
      stored: stored !== undefined,
      preparation,
      metrics,
      now: options.now,
    })
    started.catch(() => {})
    if (localIssuer !== undefined) logDemoCurlOnFirstSnapshot(feed, localIssuer, url, logger)

    // Closing at once ends a shutdown's delay too.
    const delay = new AbortController()
    const close = () => {
      shuttingDown = true
      delay.abort()
      return releasers.releaseAll()
    }
    return {
      app,
      feed,
      metrics,
      url,
      adminUrl,
      localIssuer,
      started,
      async shutdown({ delayMs }) {
        shuttingDown = true
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
  } catch (error) {
    await releasers.releaseAll()
    throw error
  }
}

/**
 * ADMIN_PORT's instance (admin-app.ts), listening. Its cleanup is added before the API's, so it
 * closes after it: probes and scrapes are answered through the API's drain.
 */
async function listenOnAdminPort(
  address: { readonly host: string; readonly port: number },
  deps: AdminAppDeps,
  releasers: Releasers,
): Promise<string> {
  const admin = buildAdminApp(deps)
  releasers.add('admin http server', () => admin.close())
  // Node's default backlog: a probe or a scrape now and then, from a few peers.
  return listenAt(admin, address)
}

/**
 * The snapshot file read (local mode keeps it beside its key pair, so that `npm start` starts
 * from it too), the feed made from it, and the file's writer; nothing reads the database yet.
 */
async function openSnapshotFeed(
  config: Config,
  logger: Logger,
  context: {
    readonly readUrl: string
    readonly feedUrl: string
    readonly dataDir: string
    readonly metrics: Metrics
    readonly releasers: Releasers
    readonly options: ServiceOptions
  },
): Promise<{ feed: SnapshotFeed; stored: StoredSnapshot | undefined }> {
  const { readUrl, feedUrl, dataDir, metrics, releasers, options } = context
  const startSignal = options.signal ?? new AbortController().signal
  const migrations = (await readMigrationFiles()).map((file) => `${file.name} ${file.checksum}`)
  const snapshotFile =
    config.snapshotFile ?? (config.oidc === null ? join(dataDir, 'snapshot') : null)
  startSignal.throwIfAborted()
  const stored =
    snapshotFile === null ? undefined : await readSnapshotFile(snapshotFile, { migrations, logger })
  const serviceVersion = await readServiceVersion()
  startSignal.throwIfAborted()
  const feed = createSnapshotFeed({
    readUrl,
    feedUrl,
    logger,
    metrics,
    ...(stored && { stored: { ...stored, maxAgeMs: config.snapshotFileMaxAgeS * 1000 } }),
    standbyModeAfterMs: options.standbyModeAfterMs,
    now: options.now,
  })
  // The writer closes after the feed (releasers run in reverse): a reload that finishes during
  // the shutdown, and the last confirmation, are written. Neither holds anything until started.
  if (snapshotFile !== null) {
    const writer = startSnapshotFileWriter({
      path: snapshotFile,
      snapshots: feed,
      migrations,
      serviceVersion,
      logger,
      metrics,
      ...(options.snapshotFileConfirmIntervalMs !== undefined && {
        confirmIntervalMs: options.snapshotFileConfirmIntervalMs,
      }),
    })
    releasers.add('snapshot file writer', () => writer.close())
  }
  releasers.add('snapshot feed', () => feed.close())
  return { feed, stored }
}

/** package.json's version: the snapshot file names the service that wrote it. */
async function readServiceVersion(): Promise<string> {
  const text = await readFile(new URL('../package.json', import.meta.url), 'utf8')
  return (JSON.parse(text) as { version: string }).version
}
