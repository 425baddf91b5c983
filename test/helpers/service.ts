import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../../src/config/config.js'
import type { Sql } from '../../src/db/connect.js'
import { importDefinitions, SEEDS_DIR } from '../../src/definitions/import-definitions.js'
import { readDefinitionFiles } from '../../src/definitions/read-definition-files.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import type { StandingQueue } from '../../src/http/standing-queue.js'
import { createMetrics } from '../../src/metrics.js'
import { type Service, startService } from '../../src/service.js'
import { createTestDatabase, type TestDatabase } from './database.js'
import { type JwksServer, startJwksServer } from './jwks-server.js'
import { waitFor } from './wait.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * Everything the in-process services of one test file log, and every token
 * they could have seen, so the file can prove at its end that no line holds a
 * token or its signature segment (docs/operations.md, verification failures).
 */
export interface LogCapture {
  readonly lines: string[]
  write(line: string): void
  /** Tokens built by hand; tokens signed by a watched JWKS server are known already. */
  track(token: string): string
  watch(server: JwksServer): void
  /** Log lines holding a known token or its signature segment. */
  leaks(): string[]
}

export function createLogCapture(): LogCapture {
  const lines: string[] = []
  const tracked: string[] = []
  const servers: JwksServer[] = []
  return {
    lines,
    write(line) {
      lines.push(line)
    },
    track(token) {
      tracked.push(token)
      return token
    },
    watch(server) {
      if (!servers.includes(server)) servers.push(server)
    },
    leaks() {
      const secrets = [...servers.flatMap((server) => server.minted), ...tracked].flatMap(
        (token) => {
          const signature = token.split('.')[2] ?? ''
          // Short segments (forged `none` tokens have none) would match by chance.
          return signature.length >= 16 ? [token, signature] : token.length >= 16 ? [token] : []
        },
      )
      return lines.filter((line) => secrets.some((secret) => line.includes(secret)))
    },
  }
}

/** Applies every file of `seeds/` the way `shell-data import` does. */
export async function importSeeds(sql: Sql): Promise<void> {
  const files = (await readdir(SEEDS_DIR)).filter((name) => name.endsWith('.json')).sort()
  await importDefinitions(
    sql,
    await readDefinitionFiles(files.map((name) => join(SEEDS_DIR, name))),
  )
}

/** A migrated test database of its own with `seeds/` imported. */
export async function createSeededDatabase(t: Teardown): Promise<TestDatabase> {
  const db = await createTestDatabase(t)
  await importSeeds(db.sql)
  return db
}

export interface Caller {
  readonly sub?: string
  readonly username?: string
  readonly name?: string
  readonly email?: string
  readonly roles?: readonly string[]
}

/** A Keycloak-shaped access token for the caller, signed by the JWKS server. */
export function signCaller(jwks: JwksServer, caller: Caller = {}): Promise<string> {
  return jwks.sign({
    sub: caller.sub ?? 'user-1',
    ...(caller.username === undefined ? {} : { preferred_username: caller.username }),
    ...(caller.name === undefined ? {} : { name: caller.name }),
    ...(caller.email === undefined ? {} : { email: caller.email }),
    realm_access: { roles: [...(caller.roles ?? [])] },
  })
}

/**
 * A service whose database never answers (nothing listens on its port), so no
 * snapshot ever loads: for the answers before the first one.
 */
export async function startServiceWithoutDatabase(
  t: Teardown,
  options: Omit<TestServiceOptions, 'env' | 'waitForSnapshot'>,
): Promise<TestService> {
  const closedPort = await findFreePort()
  return startTestService(t, {
    ...options,
    env: {
      DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing`,
      MIGRATE: 'off',
    },
    waitForSnapshot: false,
  })
}

export interface TestService {
  readonly service: Service
  /** `http://127.0.0.1:port` */
  readonly url: string
  readonly db: TestDatabase
  readonly jwks: JwksServer
  token(caller?: Caller): Promise<string>
  close(): Promise<void>
}

export interface TestServiceOptions {
  readonly logs: LogCapture
  /** A database to share (two instances, a restart); default: a fresh seeded one. */
  readonly db?: TestDatabase
  /** A provider to share; default: a fresh one. */
  readonly jwks?: JwksServer
  /** Extra or overriding environment, as the process would get it. */
  readonly env?: Record<string, string>
  /** Wait for the first snapshot before returning (default true). */
  readonly waitForSnapshot?: boolean
  /** prom-client's process metrics in the registry (default false: one collector per service is waste). */
  readonly defaultMetrics?: boolean
  /** How long a close waits for open connections (the service's DRAIN_DEADLINE_MS by default). */
  readonly drainDeadlineMs?: number
  /** When the API's excess is shed; default: http/standing-queue.ts (tests force it). */
  readonly standingQueue?: StandingQueue
  /** How often the snapshot file records a newer confirmation (a minute by default). */
  readonly snapshotFileConfirmIntervalMs?: number
  /** Only servers in recovery for this long: standby mode (the service's minute by default). */
  readonly standbyModeAfterMs?: number
  /** The clock of the outages' log lines (Date.now by default). */
  readonly now?: () => number
}

/**
 * The real service, in-process, listening on an ephemeral port: the same
 * startService that main.ts runs, configured through loadConfig from an
 * environment, against a real PostgreSQL and a real JWKS over HTTP. Closed
 * at teardown.
 */
export async function startTestService(
  t: Teardown,
  options: TestServiceOptions,
): Promise<TestService> {
  const db = options.db ?? (await createSeededDatabase(t))
  const jwks = options.jwks ?? (await startJwksServer(t))
  options.logs.watch(jwks)
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    OIDC_ISSUER: jwks.issuer,
    OIDC_AUDIENCE: 'shell-data',
    LOG_LEVEL: 'debug',
    ...options.env,
  })
  const logger = pino(
    { level: config.logLevel },
    { write: (line: string) => options.logs.write(line) },
  )
  const service = await startService(config, logger, {
    metrics: createMetrics({ defaultMetrics: options.defaultMetrics ?? false }),
    drainDeadlineMs: options.drainDeadlineMs,
    standingQueue: options.standingQueue,
    snapshotFileConfirmIntervalMs: options.snapshotFileConfirmIntervalMs,
    standbyModeAfterMs: options.standbyModeAfterMs,
    now: options.now,
  })
  t.teardown(() => service.close())
  if (options.waitForSnapshot ?? true) {
    await service.started
    await waitFor(() => service.feed.current() !== undefined, 'the first snapshot')
  }
  return {
    service,
    url: service.url,
    db,
    jwks,
    token: (caller) => signCaller(jwks, caller),
    close: () => service.close(),
  }
}
