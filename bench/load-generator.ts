import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { pinLoadGenerator } from './cpu-pinning.js'

/** A file of one request per line, `TOKEN` or `TOKEN ETAG`; `next` is the line the next leg starts at. */
export interface TokenPool {
  readonly path: string
  readonly size: number
  next: number
}

export interface LoadJob {
  /** Origin and path. */
  readonly url: string
  readonly tokens: TokenPool
  /** Sent with every request besides Authorization and If-None-Match. */
  readonly headers?: Readonly<Record<string, string>>
}

export interface LoadResult {
  readonly requests: number
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Connection errors, timeouts and responses of status 400 or more. */
  readonly errors: number
  /** The same by kind: wrk's `connect`, `read`, `write`, `timeout` and `status`. */
  readonly errorsByKind: Readonly<Record<string, number>>
}

export type LoadGenerator = ReturnType<typeof createLoadGenerator>

/** The line rotate-tokens.lua prints last; times in µs. */
type ResultLine = Record<
  'requests' | 'durationUs' | 'p50Us' | 'p99Us' | 'socketErrors' | 'statusErrors' | 'next',
  number
> & { readonly errorsByKind: Record<string, number> }

const LUA_SCRIPT = fileURLToPath(new URL('./rotate-tokens.lua', import.meta.url))
/** A leg that `stop()` ends; longer than any run. */
const UNTIL_STOPPED_S = 3_600

/**
 * wrk: written in C, on one thread, it leaves the other core to the server. A generator in
 * JavaScript would share the cores with the service and flatter the ratios: there is none.
 */
export function createLoadGenerator(connections: number) {
  // `wrk -v` prints the version and exits with 1; spawning fails when wrk is not on PATH.
  const version = spawnSync('wrk', ['-v'], { encoding: 'utf8' })
  if (version.error) throw new Error('wrk is not on PATH: apt-get install wrk (Debian package wrk)')
  const wrk = /^wrk \S+/.exec(version.stdout)?.[0] ?? 'wrk'
  const running = new Set<ChildProcess>()

  const launch = (job: LoadJob, durationS: number) => {
    const { url, tokens, headers = {} } = job
    const [command, commandArgs] = pinLoadGenerator('wrk', [
      '-t1',
      `-c${connections}`,
      `-d${durationS}s`,
      '--timeout=10s',
      `--script=${LUA_SCRIPT}`,
      ...Object.entries(headers).map(([name, value]) => `--header=${name}: ${value}`),
      url,
      tokens.path,
      String(tokens.next),
    ])
    const child = spawn(command, commandArgs, {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    running.add(child)
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    const result = new Promise<LoadResult>((resolve, reject) => {
      child.once('error', reject)
      child.once('exit', (code) => {
        running.delete(child)
        const line = output.split('\n').find((text) => text.startsWith('bench-result '))
        if (line === undefined)
          return reject(new Error(`load generator exited with ${code}:\n${output}`))
        const raw = JSON.parse(line.slice('bench-result '.length)) as ResultLine
        tokens.next = raw.next % tokens.size
        resolve({
          requests: raw.requests,
          requestsPerSecond: raw.requests / (raw.durationUs / 1e6),
          p50Ms: raw.p50Us / 1000,
          p99Ms: raw.p99Us / 1000,
          errors: raw.socketErrors + raw.statusErrors,
          errorsByKind: raw.errorsByKind,
        })
      })
    })
    // Once: a second SIGINT would kill wrk before it prints its figures.
    let stopped = false
    const stop = () => {
      if (!stopped) child.kill('SIGINT')
      stopped = true
      return result
    }
    return { result, stop }
  }

  return {
    /** Which generator, how it runs, and what that means for the figures. */
    description: `${wrk}, 1 thread, ${connections} connections`,
    run: (job: LoadJob, durationS: number) => launch(job, durationS).result,
    /** Load until `stop()`, which resolves with the figures (and may be called again). */
    start: (job: LoadJob) => ({ stop: launch(job, UNTIL_STOPPED_S).stop }),
    /** Ends any leg still running (failure, Ctrl-C). */
    close() {
      for (const child of running) child.kill('SIGKILL')
    },
  }
}
