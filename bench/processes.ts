import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findFreePort } from '../src/db/embedded.js'

/** The package root: `dist/main.js` runs from there, as `npm start` runs it. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../', import.meta.url))

/** Settings a developer's shell may hold that would change what the spawned process does. */
const SERVICE_SETTINGS =
  /^(PORT|HOST|DATABASE_URL|FEED_DATABASE_URL|MIGRATE|OIDC_.*|AUTH_FAILURE_LOG|TOKEN_CACHE_MAX|LOG_LEVEL|LOG_REQUESTS|NODE_OPTIONS)$/
/** Output kept per process, for the error message when it dies. */
const OUTPUT_TAIL_CHARS = 8_000
const READY_TIMEOUT_MS = 120_000
const STOP_TIMEOUT_MS = 15_000

export interface BenchProcess {
  readonly name: string
  /** `http://127.0.0.1:port` */
  readonly url: string
  readonly pid: number
  output(): string
  hasExited(): boolean
  /** SIGTERM (the service drains and exits; a CPU profile is written then), SIGKILL after 15 s. */
  stop(): Promise<void>
}

export interface ServiceSettings {
  readonly databaseUrl: string
  readonly issuer: string
  readonly audience: string
}

/**
 * `node dist/main.js` configured as in production: a real issuer (discovery
 * then JWKS over HTTP), its audience, an external database, migrations at
 * start, warn-level logs, no request logging.
 */
export async function startServiceProcess(
  name: string,
  settings: ServiceSettings,
  profileDir: string | null,
  node: { args: readonly string[]; main: string },
): Promise<BenchProcess> {
  const port = await findFreePort()
  return startNodeProcess({
    name,
    port,
    args: [...node.args, ...profileArgs(name, profileDir), node.main],
    settings: {
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: settings.databaseUrl,
      MIGRATE: 'auto',
      OIDC_ISSUER: settings.issuer,
      OIDC_DISCOVERY_URL: settings.issuer,
      OIDC_AUDIENCE: settings.audience,
      LOG_LEVEL: 'warn',
    },
  })
}

/** bench/baseline-server.ts with its response file; see that file. */
export async function startBaselineProcess(
  configFile: string,
  profileDir: string | null,
): Promise<BenchProcess> {
  const port = await findFreePort()
  return startNodeProcess({
    name: 'baseline',
    port,
    args: [
      '--import',
      'tsx',
      ...profileArgs('baseline', profileDir),
      'bench/baseline-server.ts',
      configFile,
    ],
    settings: { PORT: String(port) },
  })
}

/**
 * A folder per process: under `--import tsx` the module loader runs on a
 * thread of its own, which writes a profile too (named by pid and thread id).
 */
function profileArgs(name: string, profileDir: string | null): string[] {
  return profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`]
}

async function startNodeProcess(options: {
  name: string
  port: number
  args: string[]
  settings: Record<string, string>
}): Promise<BenchProcess> {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env))
    if (!SERVICE_SETTINGS.test(key)) env[key] = value
  const child: ChildProcess = spawn(process.execPath, options.args, {
    cwd: PACKAGE_ROOT,
    env: { ...env, ...options.settings },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (chunk: string) => {
    output = (output + chunk).slice(-OUTPUT_TAIL_CHARS)
  }
  child.stdout?.setEncoding('utf8').on('data', keep)
  child.stderr?.setEncoding('utf8').on('data', keep)
  let exited = false
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true
      resolve()
    }),
  )
  const url = `http://127.0.0.1:${options.port}`
  const benchProcess: BenchProcess = {
    name: options.name,
    url,
    pid: child.pid ?? -1,
    output: () => output,
    hasExited: () => exited,
    async stop() {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await exit
      clearTimeout(timer)
    },
  }
  try {
    await waitForReady(benchProcess)
  } catch (error) {
    await benchProcess.stop()
    throw error
  }
  return benchProcess
}

async function waitForReady(target: BenchProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    if (target.hasExited()) {
      throw new Error(`${target.name} exited before it was ready:\n${target.output()}`)
    }
    try {
      const response = await fetch(`${target.url}/readyz`)
      await response.arrayBuffer()
      if (response.status === 200) return
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${target.name} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${target.output()}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
