import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { findFreePort } from '../src/embedded/embedded.js'
import { PACKAGE_ROOT, serviceEnv } from '../test/helpers/service-process.js'

/** The large data set is read and built before /readyz answers. */
const READY_TIMEOUT_MS = 120_000
/** How often /readyz is asked during a start: the resolution of `startup`. */
const READY_POLL_MS = 10
/** The service drains within 10 s of SIGINT (no SHUTDOWN_DELAY_S); past this it is killed. */
const STOP_TIMEOUT_MS = 15_000

export interface NodeProcess {
  /** `http://127.0.0.1:port` */
  readonly url: string
  readonly pid: number
  /** Settles when the process has exited, with how. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Milliseconds from the spawn until it first answered HTTP (listening), then /readyz 200. */
  readonly startup: { readonly listeningMs: number; readonly readyMs: number }
  /**
   * SIGINT, SIGKILL after a while; a --cpu-prof profile is written on the
   * way out. SIGINT rather than SIGTERM: nothing balances load onto these
   * processes, so the service's SHUTDOWN_DELAY_S would only slow the run.
   */
  stop(): Promise<void>
}

/**
 * `node ARGS` from the package root on a free PORT, inheriting none of the
 * service's settings (CONFIG_VARIABLES) nor NODE_OPTIONS from the caller's
 * shell; ready when GET /readyz answers 200. With a profile folder it runs
 * under `--cpu-prof`, writing into a folder of its own, named after it.
 */
export async function startNodeProcess(
  name: string,
  args: readonly string[],
  settings: Record<string, string>,
  profileDir: string | null,
): Promise<NodeProcess> {
  const port = await findFreePort()
  const profile =
    profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`]
  const child = spawn(process.execPath, [...profile, ...args], {
    cwd: PACKAGE_ROOT,
    env: serviceEnv({ ...settings, PORT: String(port), NODE_OPTIONS: '' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  // The last lines, for the error message when it dies.
  const keep = (chunk: string) => (output = (output + chunk).slice(-8_000))
  child.stdout.setEncoding('utf8').on('data', keep)
  child.stderr.setEncoding('utf8').on('data', keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  const spawnedAt = performance.now()
  const startup = { listeningMs: Number.NaN, readyMs: Number.NaN }
  const started: NodeProcess = {
    url: `http://127.0.0.1:${port}`,
    startup,
    pid: child.pid ?? -1,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
    },
  }
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    const status = await readinessOf(started.url)
    const elapsedMs = performance.now() - spawnedAt
    if (status !== 0 && Number.isNaN(startup.listeningMs)) startup.listeningMs = elapsedMs
    if (status === 200) break
    if (child.exitCode !== null || Date.now() > deadline) {
      await started.stop()
      throw new Error(`${name} exited or was not ready in time:\n${output}`)
    }
    await sleep(READY_POLL_MS)
  }
  startup.readyMs = performance.now() - spawnedAt
  return started
}

/** /readyz's status; 0 while nothing listens. */
async function readinessOf(url: string): Promise<number> {
  try {
    const response = await fetch(`${url}/readyz`)
    await response.arrayBuffer()
    return response.status
  } catch {
    return 0
  }
}
