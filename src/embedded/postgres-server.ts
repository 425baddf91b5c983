import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chown, mkdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Logger } from 'pino'
import { EmbeddedPostgresError } from './embedded-postgres-error.js'
import type { PostgresRuntime } from './postgres-runtime.js'

/** The superuser of every embedded cluster. */
export const SUPERUSER = 'postgres'

/** A server that never says it is ready (a disk that hangs, a stuck recovery) is given up after this. */
const START_TIMEOUT_MS = 60_000
/** A fast shutdown that has not ended after this is cut short. */
const STOP_TIMEOUT_MS = 15_000
/** PostgreSQL's words once it accepts connections, in English: lc_messages is C in our clusters. */
const READY_MESSAGE = /database system is ready to accept (read-only )?connections/
/** The PostgreSQL lines kept to explain a failed start. */
const KEPT_LOG_LINES = 20

export interface ClusterOptions {
  readonly runtime: PostgresRuntime
  /** The cluster's data folder (PGDATA). */
  readonly dataDir: string
  readonly logger: Logger
}

/** Creates a cluster with a superuser password, UTF-8 in the C locale whatever the machine's. */
export async function initialiseCluster(
  options: ClusterOptions & { readonly password: string },
): Promise<void> {
  const { runtime, dataDir, password } = options
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  // initdb reads the password from a file; the server's user must be able to read it.
  const passwordFile = join(dirname(dataDir), `.initdb-password-${randomBytes(6).toString('hex')}`)
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 })
  try {
    if (runtime.user !== null) {
      await chown(dataDir, runtime.user.uid, runtime.user.gid)
      await chown(passwordFile, runtime.user.uid, runtime.user.gid)
    }
    const initdb = runAs(options, 'initdb', [
      `--pgdata=${dataDir}`,
      `--username=${SUPERUSER}`,
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
    ])
    const { code, error } = await initdb.ended
    if (error !== undefined || code !== 0) {
      throw new EmbeddedPostgresError(
        `initdb could not create the embedded PostgreSQL cluster in ${dataDir}: ${error ?? initdb.lastLines().at(-1) ?? `exit code ${code}`}; ${whatToDoAbout(dataDir, runtime)}`,
      )
    }
  } finally {
    await rm(passwordFile, { force: true })
  }
}

export type PostgresServer = Awaited<ReturnType<typeof startPostgresServer>>

/** Thrown when the port was taken between choosing it and PostgreSQL binding it. */
export class PortTakenError extends EmbeddedPostgresError {
  override name = 'PortTakenError'
}

/**
 * Starts `postgres` on a cluster, on loopback TCP only (no Unix socket, so nothing is written into
 * a shared folder), and resolves once it accepts connections; `settings` go as `-c name=value`.
 */
export async function startPostgresServer(
  options: ClusterOptions & {
    readonly port: number
    readonly settings?: Readonly<Record<string, string>>
  },
) {
  const { dataDir, port, logger } = options
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    ...options.settings,
  }
  const server = runAs(options, 'postgres', [
    '-D',
    dataDir,
    '-p',
    String(port),
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ])
  const ready = await Promise.race([
    server.ready,
    server.ended.then(() => false),
    new Promise<'timeout'>((resolve) => setTimeout(resolve, START_TIMEOUT_MS, 'timeout').unref()),
  ])
  if (ready !== true) {
    server.child.kill('SIGKILL')
    const { error } = await server.ended
    const lines = server.lastLines()
    if (lines.some((line) => /could not bind .* address|Address already in use/.test(line))) {
      throw new PortTakenError(
        `the embedded PostgreSQL could not listen on 127.0.0.1:${port}, which another program holds; stop that program or try again`,
      )
    }
    const reason =
      ready === 'timeout'
        ? `it did not accept connections within ${START_TIMEOUT_MS / 1000} s`
        : (error ?? explainFailure(lines))
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${dataDir} did not start: ${reason}; ${whatToDoAbout(dataDir, options.runtime)}`,
    )
  }
  let stopping = false
  server.ended.then(({ code, signal }) => {
    if (!stopping) logger.error({ code, signal }, 'the embedded PostgreSQL exited by itself')
  })
  return {
    port,
    /** Fast shutdown: open connections are closed, the data stays. */
    async stop() {
      stopping = true
      if (server.hasEnded()) return
      server.child.kill('SIGINT')
      const timer = setTimeout(() => server.child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await server.ended
      clearTimeout(timer)
    },
  }
}

/** The most telling line of PostgreSQL's log: its FATAL, or else its last words. */
function explainFailure(lines: readonly string[]): string {
  const fatal = lines.findLast((line) => /\b(FATAL|PANIC):/.test(line))
  const detail = fatal === undefined ? undefined : lines[lines.indexOf(fatal) + 1]
  const chosen = fatal ?? lines.at(-1) ?? 'it exited without a word'
  const text = chosen.replace(/^.*?\b(FATAL|PANIC):\s*/, '')
  return detail !== undefined && /\bDETAIL:/.test(detail)
    ? `${text} (${detail.replace(/^.*?DETAIL:\s*/, '')})`
    : text
}

function whatToDoAbout(dataDir: string, runtime: PostgresRuntime): string {
  const who = runtime.user === null ? 'this user' : `the "${runtime.user.name}" OS user`
  return `check that ${who} owns ${dataDir} and can reach it; if the folder is damaged, move it away to start on a new, empty database (LOG_LEVEL=trace shows PostgreSQL's log)`
}

/** How a binary ended; `error` when it could not be started at all. */
interface Ending {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly error?: string
}

/** Runs a binary of the runtime as its user; its output goes to the log at trace level. */
function runAs(options: ClusterOptions, binary: string, args: string[]) {
  const { runtime, logger } = options
  const file = join(runtime.binDir, binary)
  const child = spawn(file, args, {
    ...(runtime.user === null ? {} : { uid: runtime.user.uid, gid: runtime.user.gid }),
    // A folder every user may enter: the caller's own may be closed to the server's user.
    cwd: '/',
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  let ended = false
  let markReady: (ready: boolean) => void = () => {}
  // True once the server says it accepts connections (never for initdb).
  const ready = new Promise<boolean>((resolve) => {
    markReady = resolve
  })
  let pending = ''
  const onOutput = (chunk: string) => {
    pending += chunk
    const complete = pending.split('\n')
    pending = complete.pop() ?? ''
    for (const line of complete) {
      if (line.trim() === '') continue
      logger.trace({ postgres: line }, binary)
      lines.push(line)
      if (lines.length > KEPT_LOG_LINES) lines.shift()
      if (READY_MESSAGE.test(line)) markReady(true)
    }
  }
  child.stdout?.setEncoding('utf8').on('data', onOutput)
  child.stderr?.setEncoding('utf8').on('data', onOutput)
  const endedPromise = new Promise<Ending>((resolve) => {
    // 'error' without 'exit': the binary could not be run at all (EACCES, ENOENT).
    child.once('error', (error: NodeJS.ErrnoException) => {
      ended = true
      const who = runtime.user === null ? '' : ` as the "${runtime.user.name}" OS user`
      resolve({
        code: null,
        signal: null,
        error: `cannot run ${file}${who} (${error.code ?? error.message})`,
      })
    })
    // 'close', not 'exit': the last lines of output have been read by then.
    child.once('close', (code, signal) => {
      ended = true
      if (pending.trim() !== '') lines.push(pending)
      resolve({ code, signal })
    })
  })
  return {
    child,
    ready,
    ended: endedPromise,
    hasEnded: () => ended,
    lastLines: () => [...lines],
  }
}
