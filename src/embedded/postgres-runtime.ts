import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { chmod, cp, lstat, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import type { Logger } from 'pino'
import { EmbeddedPostgresError } from './embedded-postgres-error.js'

const execFileAsync = promisify(execFile)

/** The OS user PostgreSQL runs as when we are root: PostgreSQL refuses to run as root. */
const POSTGRES_OS_USER = 'postgres'

/**
 * Root-owned, world-readable copies of the binaries outside every clone, so the postgres OS user
 * can run them wherever the clone is (docs/operations.md, "From a clone"). A cache: deleting costs a copy.
 */
const ROOT_BINARIES_CACHE = '/var/cache/shell-data/postgres'

/** Written last into a cached copy, so that a copy cut short is never used. */
const COMPLETE_MARKER = '.complete'

export interface OsUser {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

/** Which binaries run the embedded PostgreSQL, and as whom. */
export interface PostgresRuntime {
  /** Folder of `initdb` and `postgres`; their `lib/` and `share/` are found beside it. */
  readonly binDir: string
  /** The OS user the server runs as; null for this process's own user. */
  readonly user: OsUser | null
}

/** The package of PostgreSQL binaries for this platform, an optional dependency of embedded-postgres. */
const BINARIES_PACKAGE = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`

interface InstalledBinaries {
  /** `native/` of the package: bin/, lib/, share/. */
  readonly nativeDir: string
  readonly version: string
}

function findInstalledBinaries(): InstalledBinaries | null {
  let entry: string
  try {
    const embeddedPostgres = createRequire(import.meta.url).resolve('embedded-postgres')
    entry = createRequire(embeddedPostgres).resolve(BINARIES_PACKAGE)
  } catch {
    return null
  }
  const packageDir = join(dirname(entry), '..')
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    version: string
  }
  return { nativeDir: join(packageDir, 'native'), version }
}

/** False in a production install (`npm ci --omit=dev`, the image): DATABASE_URL is then needed. */
export function isEmbeddedPostgresInstalled(): boolean {
  return findInstalledBinaries() !== null
}

/** Root runs a cached copy as the postgres OS user (made if missing); others, the package's own. */
export async function resolvePostgresRuntime(logger: Logger): Promise<PostgresRuntime> {
  const installed = findInstalledBinaries()
  if (installed === null) {
    throw new EmbeddedPostgresError(
      `this installation has no PostgreSQL binaries (${BINARIES_PACKAGE}); run npm install, or set DATABASE_URL`,
    )
  }
  if (process.getuid?.() !== 0) return { binDir: join(installed.nativeDir, 'bin'), user: null }
  const user = await findOrCreateOsUser(POSTGRES_OS_USER, logger)
  const copyDir = await cacheBinariesForRoot(installed, logger)
  return { binDir: join(copyDir, 'bin'), user }
}

async function findOrCreateOsUser(name: string, logger: Logger): Promise<OsUser> {
  const found = await lookUpOsUser(name)
  if (found !== null) return found
  try {
    await execFileAsync('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      name,
    ])
  } catch (error) {
    throw new EmbeddedPostgresError(
      `PostgreSQL does not run as root, and there is no "${name}" OS user to run it as, nor could one be made (${describeExecFailure(error)}); create it (useradd --system ${name}), or run as an ordinary user`,
    )
  }
  const made = await lookUpOsUser(name)
  if (made === null) {
    throw new EmbeddedPostgresError(
      `the OS user "${name}" was made but cannot be found; create it by hand (useradd --system ${name}), or run as an ordinary user`,
    )
  }
  logger.info({ user: name }, 'OS user made for the embedded PostgreSQL')
  return made
}

async function lookUpOsUser(name: string): Promise<OsUser | null> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', name]),
      execFileAsync('id', ['-g', name]),
    ])
    return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
  } catch {
    return null
  }
}

function describeExecFailure(error: unknown): string {
  const { stderr, code } = error as { stderr?: string; code?: unknown }
  const firstLine = stderr?.trim().split('\n')[0]
  return firstLine || String(code ?? error)
}

/**
 * Copies the binaries once per version into ROOT_BINARIES_CACHE. Two processes may copy at once:
 * each into a folder of its own, renamed into place; the loser's copy is dropped.
 */
async function cacheBinariesForRoot(installed: InstalledBinaries, logger: Logger): Promise<string> {
  const target = join(
    ROOT_BINARIES_CACHE,
    `${BINARIES_PACKAGE.replace('/', '+')}@${installed.version}`,
  )
  if (await exists(join(target, COMPLETE_MARKER))) return target
  const staging = `${target}.${randomBytes(6).toString('hex')}.partial`
  try {
    await makeReachableFolders(ROOT_BINARIES_CACHE)
    await cp(installed.nativeDir, staging, { recursive: true, verbatimSymlinks: true })
    await makeWorldReadable(staging)
    await writeFile(join(staging, COMPLETE_MARKER), '')
    await chmod(join(staging, COMPLETE_MARKER), 0o644)
    await rename(staging, target).catch(async (error: NodeJS.ErrnoException) => {
      // Another process put its copy in place first: use that one.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
    })
  } catch (error) {
    throw new EmbeddedPostgresError(
      `cannot copy the PostgreSQL binaries to ${target}, where the "${POSTGRES_OS_USER}" OS user can run them (${(error as NodeJS.ErrnoException).code ?? error}); make ${ROOT_BINARIES_CACHE} writable for root, or run as an ordinary user`,
    )
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  logger.info(
    { binaries: target },
    'PostgreSQL binaries copied where the postgres OS user can run them',
  )
  return target
}

/** Creates each missing folder of `path` with mode 0755, whatever the umask. */
export async function makeReachableFolders(path: string): Promise<void> {
  const missing: string[] = []
  for (let folder = path; !(await exists(folder)); folder = dirname(folder)) missing.unshift(folder)
  for (const folder of missing) {
    await mkdir(folder).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error
    })
    await chmod(folder, 0o755)
  }
}

/** Folders 0755, files readable by all, executables runnable by all; symbolic links left as they are. */
async function makeWorldReadable(path: string): Promise<void> {
  const info = await lstat(path)
  if (info.isSymbolicLink()) return
  if (info.isDirectory()) {
    await chmod(path, 0o755)
    for (const entry of await readdir(path)) await makeWorldReadable(join(path, entry))
    return
  }
  await chmod(path, info.mode & 0o111 ? 0o755 : 0o644)
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}
