import { randomBytes } from 'node:crypto'
import { chmod, chown, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { type AddressInfo, createServer } from 'node:net'
import { basename, dirname, join } from 'node:path'
import type { Logger } from 'pino'
import { EmbeddedPostgresError } from './embedded-postgres-error.js'
import {
  exists,
  makeReachableFolders,
  type OsUser,
  type PostgresRuntime,
  resolvePostgresRuntime,
} from './postgres-runtime.js'
import {
  type ClusterOptions,
  initialiseCluster,
  PortTakenError,
  SUPERUSER,
  startPostgresServer,
} from './postgres-server.js'

export { EmbeddedPostgresError } from './embedded-postgres-error.js'
export { isEmbeddedPostgresInstalled } from './postgres-runtime.js'

/**
 * Root's clusters, each clone's in a folder of its own that the postgres OS user owns, outside the
 * clone (whose folder that user may not enter; docs/operations.md, "From a clone").
 */
export const ROOT_CLUSTERS_DIR = '/var/lib/shell-data/clusters'
/** In `.data/`: the path of root's cluster for this clone, where its restarts find it. */
export const CLUSTER_RECORD = 'postgres-cluster'

/** Another start is tried on a fresh port when the one chosen was taken meanwhile. */
const PORT_ATTEMPTS = 3

/**
 * Starts PostgreSQL from `embedded-postgres` on a free loopback port, its data kept across restarts
 * (in `dataDir`, or as root in the folder recorded there). A server of ours already running on that
 * cluster (the service's, while the CLI is used) is reused, not started twice on the same files.
 */
export async function startEmbeddedDatabase(options: {
  dataDir: string
  logger: Logger
}): Promise<{ url: string; stop(): Promise<void> }> {
  const { dataDir, logger } = options
  await mkdir(dataDir, { recursive: true, mode: 0o755 }).catch((error) => {
    throw new EmbeddedPostgresError(
      `cannot create ${dataDir} for the embedded PostgreSQL (${error.code ?? error}); make the folder writable, or set DATABASE_URL`,
    )
  })
  const password = await readOrCreatePassword(join(dataDir, 'postgres-password'))
  const isRoot = process.getuid?.() === 0
  const clusterDir = isRoot ? await findRootCluster(dataDir) : join(dataDir, 'pg')

  const runningPort = await findRunningServerPort(clusterDir)
  if (runningPort !== null) {
    logger.debug({ port: runningPort }, 'reusing the embedded PostgreSQL already running')
    return { url: buildUrl(runningPort, password), stop: async () => {} }
  }

  const runtime = await resolvePostgresRuntime(logger)
  const cluster: ClusterOptions = { runtime, dataDir: clusterDir, logger }
  if (!(await exists(join(clusterDir, 'PG_VERSION')))) {
    if (isRoot && clusterDir !== join(dataDir, 'pg')) {
      await makeRootClusterHome(dataDir, clusterDir, runtime)
    }
    logger.info({ dataDir: clusterDir }, 'creating the embedded PostgreSQL cluster')
    await initialiseCluster({ ...cluster, password })
  } else if (runtime.user !== null && (await stat(clusterDir)).uid !== runtime.user.uid) {
    // The data folder must belong to the user PostgreSQL runs as, e.g. after a run as another user.
    await chownRecursive(clusterDir, runtime.user)
  }
  const server = await startOnFreePort(cluster)
  logger.info({ port: server.port }, 'embedded PostgreSQL started')
  return {
    url: buildUrl(server.port, password),
    stop: async () => {
      await server.stop()
      logger.info('embedded PostgreSQL stopped')
    },
  }
}

async function startOnFreePort(cluster: ClusterOptions) {
  for (let attempt = 1; ; attempt += 1) {
    const port = await findFreePort()
    try {
      return await startPostgresServer({ ...cluster, port })
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt === PORT_ATTEMPTS) throw error
      cluster.logger.debug({ port }, 'the port was taken meanwhile; trying another')
    }
  }
}

/**
 * Root's cluster for this clone: the recorded one; else `.data/pg` when an earlier version made it
 * there (kept, with its data); else a new folder under ROOT_CLUSTERS_DIR, recorded once it has one.
 */
async function findRootCluster(dataDir: string): Promise<string> {
  try {
    const recorded = (await readFile(join(dataDir, CLUSTER_RECORD), 'utf8')).trim()
    if (recorded !== '') return recorded
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const inClone = join(dataDir, 'pg')
  if (await exists(join(inClone, 'PG_VERSION'))) return inClone
  const cloneName = basename(dirname(dataDir)).replace(/[^A-Za-z0-9_.-]/g, '_')
  return join(ROOT_CLUSTERS_DIR, `${cloneName}-${randomBytes(6).toString('hex')}`, 'pg')
}

/** The folder above root's new cluster, owned by the server's user, and the record of it. */
async function makeRootClusterHome(
  dataDir: string,
  clusterDir: string,
  runtime: PostgresRuntime,
): Promise<void> {
  const home = dirname(clusterDir)
  if (runtime.user === null) return
  try {
    await makeReachableFolders(dirname(home))
    await mkdir(home, { recursive: true, mode: 0o700 })
    await chmod(home, 0o700)
    await chown(home, runtime.user.uid, runtime.user.gid)
  } catch (error) {
    throw new EmbeddedPostgresError(
      `cannot create ${home} for the embedded PostgreSQL's data (${(error as NodeJS.ErrnoException).code ?? error}); make ${ROOT_CLUSTERS_DIR} writable for root, or run as an ordinary user`,
    )
  }
  await writeFile(join(dataDir, CLUSTER_RECORD), `${clusterDir}\n`, { mode: 0o644 })
}

function buildUrl(port: number, password: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new EmbeddedPostgresError(
        `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? error}); run as the user that created it, or move ${dirname(file)} away to start on a new, empty database`,
      )
    }
  }
  const password = randomBytes(18).toString('base64url')
  try {
    await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    // Another process of ours (the CLI beside the service) wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readOrCreatePassword(file)
    throw error
  }
  return password
}

/** The port in PostgreSQL's lock file when its server is alive; null for no file or a stale one. */
async function findRunningServerPort(clusterDir: string): Promise<number | null> {
  const pidFile = await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => null)
  if (pidFile === null) return null
  const lines = pidFile.split('\n')
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

async function chownRecursive(path: string, user: OsUser): Promise<void> {
  await chown(path, user.uid, user.gid)
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const child = join(path, entry.name)
    if (entry.isDirectory()) await chownRecursive(child, user)
    else await chown(child, user.uid, user.gid)
  }
}

/** Asks the OS for a free port; PostgreSQL binds it right after. */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.unref()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}
