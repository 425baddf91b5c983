import { execFile, spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)
const LUA_SCRIPT = fileURLToPath(new URL('./overload.lua', import.meta.url))
/** The load: two wrk threads, each with its own tokens. */
export const LOAD_THREADS = 2
/** A request older than this is wrk's timeout, and the contract's "waits 10 s". */
const TIMEOUT_S = 10
/** What the kubelet and Prometheus do: a new connection for each probe, every 250 ms. */
export const PROBE_PATHS = ['/healthz', '/readyz', '/metrics'] as const
const PROBE_INTERVAL_MS = 250
/** A probe unanswered after this counts as failed (the kubelet gives up after 2 s). */
const PROBE_TIMEOUT_MS = 10_000

/** What overload.lua prints last. */
export interface LoadFigures {
  readonly requests: number
  readonly durationS: number
  /** Answers by status, as text. */
  readonly statuses: Readonly<Record<string, number>>
  /** 200s by the whole second of the load they were answered in. */
  readonly servedInSecond: Readonly<Record<string, number>>
  /** The 200s, each timed from its request (0 when none was timed). */
  readonly served: { readonly timed: number; p50Ms: number; p99Ms: number; maxMs: number }
  /** wrk's own figures over every answer, 503s included. */
  readonly all: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }
  readonly errorsByKind: Readonly<Record<string, number>>
}

/** One probe: when it started (s into the load), how long it took, its status (0: none). */
export interface ProbeSample {
  readonly path: string
  readonly atS: number
  readonly ms: number
  readonly status: number
}

/**
 * Writes thread N's token file (`PREFIX-N.txt`, lines "TOKEN SUB"): the threads get distinct
 * slices of `tokens`, at most `perThread` each.
 */
export async function writeThreadTokens(
  prefix: string,
  tokens: readonly string[],
  perThread: number,
): Promise<void> {
  const size = Math.min(perThread, Math.floor(tokens.length / LOAD_THREADS))
  for (let thread = 1; thread <= LOAD_THREADS; thread += 1) {
    const slice = tokens.slice((thread - 1) * size, thread * size)
    const lines = slice.map((token) => `${token} ${subOf(token)}`)
    await writeFile(`${prefix}-${thread}.txt`, `${lines.join('\n')}\n`)
  }
}

/** The `sub` of a token's payload, which the shell's body repeats (read, not verified). */
export function subOf(token: string): string {
  const payload = token.split('.')[1] ?? ''
  return (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub: string }).sub
}

/** wrk -t2 with overload.lua for `durationS`; `honourRetryAfter`: a 503's wait is kept. */
export async function runOverloadLoad(options: {
  readonly url: string
  readonly tokenPrefix: string
  readonly connections: number
  readonly durationS: number
  readonly honourRetryAfter: boolean
}): Promise<LoadFigures> {
  const args = [
    `-t${LOAD_THREADS}`,
    `-c${options.connections}`,
    `-d${options.durationS}s`,
    `--timeout=${TIMEOUT_S}s`,
    `--script=${LUA_SCRIPT}`,
    options.url,
    options.tokenPrefix,
  ]
  const child = spawn('wrk', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, OVERLOAD_HONOUR_RETRY_AFTER: options.honourRetryAfter ? '1' : '0' },
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', resolve)
  })
  const line = output.split('\n').find((text) => text.startsWith('overload-result '))
  if (line === undefined) throw new Error(`wrk exited with ${code}:\n${output.slice(-2000)}`)
  const raw = JSON.parse(line.slice('overload-result '.length))
  return {
    requests: raw.requests,
    durationS: raw.durationUs / 1e6,
    statuses: raw.statuses,
    servedInSecond: raw.servedInSecond,
    served: raw.served,
    all: { p50Ms: raw.p50Us / 1000, p99Ms: raw.p99Us / 1000, maxMs: raw.maxUs / 1000 },
    errorsByKind: raw.errorsByKind,
  }
}

/**
 * A GET on a connection of its own, closed after the answer, as the kubelet probes: its status,
 * 0 when it failed or was not answered within the probe timeout.
 */
export function getOnNewConnection(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve) => {
    const outgoing = request(
      { hostname, port, path, agent: false, headers: { ...headers, connection: 'close' } },
      (incoming) => {
        incoming.resume()
        incoming.once('end', () => resolve(incoming.statusCode ?? 0))
        incoming.once('error', () => resolve(0))
      },
    )
    outgoing.setTimeout(PROBE_TIMEOUT_MS, () => outgoing.destroy())
    outgoing.once('error', () => resolve(0))
    outgoing.end()
  })
}

/** Probes on a new connection each, every 250 ms, until `stop()`, which returns them all. */
export function startProbePoller(baseUrl: string, paths: readonly string[] = PROBE_PATHS) {
  const startedAt = performance.now()
  const samples: ProbeSample[] = []
  const pending: Promise<void>[] = []
  const probe = async (path: string) => {
    const atMs = performance.now()
    const status = await getOnNewConnection(baseUrl, path)
    samples.push({ path, atS: (atMs - startedAt) / 1000, ms: performance.now() - atMs, status })
  }
  const timer = setInterval(() => {
    for (const path of paths) pending.push(probe(path))
  }, PROBE_INTERVAL_MS)
  return {
    async stop(): Promise<ProbeSample[]> {
      clearInterval(timer)
      await Promise.all(pending)
      return samples
    },
  }
}

/**
 * The connections waiting in the port's listen queue (accepted by the kernel, not yet by the
 * process), read with `ss` every 250 ms; null samples when `ss` is missing.
 */
export function startListenQueueSampler(port: number) {
  const startedAt = performance.now()
  const samples: { atS: number; queued: number }[] = []
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const { stdout } = await execFileAsync('ss', ['-Hltn', `sport = :${port}`])
        const queued = Number(stdout.trim().split(/\s+/)[1])
        samples.push({ atS: (performance.now() - startedAt) / 1000, queued })
      } catch {
        return
      }
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return samples
    },
  }
}

/** What a burst of one request on each of many new connections got. */
export interface BurstFigures {
  /** Answers by status (0: none: refused, reset or not answered within the probe timeout). */
  readonly statuses: Readonly<Record<string, number>>
  readonly slowestMs: number
}

/**
 * One GET with each token, all sent at once, each on a connection of its own: the contract's
 * burst ("1,000 connections opened at once that each send one request"). Node opens them, as a
 * page's many users would; it only waits, so it takes little of the cores from the service.
 */
export async function sendBurst(
  baseUrl: string,
  path: string,
  tokens: readonly string[],
): Promise<BurstFigures> {
  const startedAt = performance.now()
  let slowestMs = 0
  const statuses: Record<string, number> = {}
  await Promise.all(
    tokens.map(async (token) => {
      const status = await getOnNewConnection(baseUrl, path, { authorization: `Bearer ${token}` })
      slowestMs = Math.max(slowestMs, performance.now() - startedAt)
      statuses[status] = (statuses[status] ?? 0) + 1
    }),
  )
  return { statuses, slowestMs }
}
