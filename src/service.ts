import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
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
import { hostInUrl } from './config/host-address.js'
import {
  createPreparation,
  prepareDatabaseThenFeed,
  serveStoredUnlessDatabaseAnswers,
} from './database-preparation.js'
import { connectDatabase, namesSeveralHosts } from './db/connect.js'
import { readMigrationFiles } from './db/migrate.js'
import { findFreePort } from './embedded/embedded.js'
import { LOCAL_DATA_DIR, locateDatabase } from './embedded/locate-database.js'
import { createSnapshotFeed, type SnapshotFeed } from './feed/snapshot-feed.js'
import type { ConcurrencyLimit } from './http/concurrency-limit.js'
import { createMetrics, type Metrics } from './metrics.js'
import { createReleasers } from './releasers.js'
import { buildCaller } from './snapshot/caller.js'
import type { Snapshot } from './snapshot/types.js'
import { readSnapshotFile } from './snapshot-file/read-snapshot-file.js'
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
  /** API requests taken at once; default: the adaptive limit. */
  readonly concurrencyLimit?: ConcurrencyLimit
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
  try {
    const metrics = options.metrics ?? createMetrics()
    const dataDir = options.dataDir ?? LOCAL_DATA_DIR
    const location = await locateDatabase(config.databaseUrl, logger)
    releasers.add('database server', () => location.stop())
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
    const migrations = (await readMigrationFiles()).map((file) => `${file.name} ${file.checksum}`)
    // Local mode keeps it beside its key pair, so that `npm start` starts from it too.
    const snapshotFile =
      config.snapshotFile ?? (config.oidc === null ? join(dataDir, 'snapshot') : null)
    const stored =
      snapshotFile === null
        ? undefined
        : await readSnapshotFile(snapshotFile, { migrations, logger })
    const feed = createSnapshotFeed({
      readUrl: location.url,
      feedUrl,
      logger,
      metrics,
      ...(stored && { stored: { snapshot: stored, maxAgeMs: config.snapshotFileMaxAgeS * 1000 } }),
      standbyModeAfterMs: options.standbyModeAfterMs,
      now: options.now,
    })
    releasers.add('snapshot feed', () => feed.close())
    if (snapshotFile !== null) {
      const writer = startSnapshotFileWriter({
        path: snapshotFile,
        snapshots: feed,
        migrations,
        serviceVersion: await readServiceVersion(),
        logger,
        metrics,
      })
      releasers.add('snapshot file writer', () => writer.close())
    }
    // Migrations go to the primary, where the advisory lock holds (docs/operations.md,
    // "Migrations"): FEED_DATABASE_URL when it differs, and among several hosts the one not in
    // recovery ("Failover"); one host alone may be a standby on purpose, checked, never written
    // (prepare-schema.ts). Used at start: closes after 1 min idle.
    const separateFeed = feedUrl !== location.url
    const migrationSql =
      !separateFeed && !namesSeveralHosts(feedUrl)
        ? null
        : connectDatabase(feedUrl, { max: 1, applicationName: 'shell-data-migrate', primary: true })
    if (migrationSql !== null)
      releasers.add('migration connection', () => migrationSql.end({ timeout: 5 }))
    const preparation = createPreparation()

    const app = buildApp({
      logger,
      metrics,
      verifier,
      snapshots: preparation.explain(feed),
      logRequests: config.logRequests,
      corsOrigins: config.corsOrigins,
      eventStreamsMax: config.eventStreamsMax,
      isShuttingDown: () => shuttingDown,
      drainDeadlineMs: options.drainDeadlineMs,
      concurrencyLimit: options.concurrencyLimit,
      ...(localIssuer === undefined ? {} : { localIssuer }),
    })
    releasers.add('http server', () => app.close())
    await app.listen({ port, host: config.host, backlog: LISTEN_BACKLOG })
    const address = app.server.address()
    const boundPort = typeof address === 'object' && address !== null ? address.port : port
    const url = `http://${hostInUrl(config.host)}:${boundPort}`
    logger.info({ url }, `listening on ${url}`)

    releasers.add('database preparation', () => preparation.abort())
    if (stored !== undefined) void serveStoredUnlessDatabaseAnswers(sql, feed)
    const started = prepareDatabaseThenFeed({
      config,
      logger,
      sql,
      schema: {
        migrations: {
          sql: migrationSql ?? sql,
          variable: separateFeed ? 'FEED_DATABASE_URL' : 'DATABASE_URL',
        },
        reads: separateFeed ? { sql, variable: 'DATABASE_URL' } : null,
      },
      embedded: location.embedded,
      feed,
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

/** package.json's version: the snapshot file names the service that wrote it. */
async function readServiceVersion(): Promise<string> {
  const text = await readFile(new URL('../package.json', import.meta.url), 'utf8')
  return (JSON.parse(text) as { version: string }).version
}

/** Every role granted anywhere: the demo user sees every item. */
function collectGrantedRoles(snapshot: Snapshot): string[] {
  const roles = new Set<string>()
  for (const key of snapshot.appKeys)
    for (const role of snapshot.grantedRoles(key) ?? []) roles.add(role)
  return [...roles].sort()
}

function logDemoCurlOnFirstSnapshot(
  feed: SnapshotFeed,
  issuer: LocalIssuer,
  url: string,
  logger: Logger,
): void {
  const unsubscribe = feed.onSwap((snapshot) => {
    unsubscribe()
    const [firstApp] = snapshot.appKeys
    const path = firstApp === undefined ? '/api/v1/apps' : `/api/v1/shell/${firstApp}`
    const roles = collectGrantedRoles(snapshot)
    issuer
      .signToken({
        sub: 'demo-user',
        username: 'demo',
        name: 'Demo User',
        email: 'demo@example.com',
        roles,
        ttlSeconds: 8 * 3600,
      })
      .then((token) => {
        const curl = `curl -H 'Authorization: Bearer ${token}' ${url}${path}`
        const preview = `${url}/`
        logger.info(
          { curl, preview, roles },
          `local mode ready; try: ${curl} or open the preview page at ${preview}`,
        )
      })
      .catch((error: unknown) => logger.error({ err: error }, 'cannot sign the demo token'))
  })
}
