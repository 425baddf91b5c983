/**
 * The load generator when wrk is not on PATH: one autocannon leg in a process
 * of its own, with the token rotation and the result line of rotate-tokens.lua.
 * `node --import tsx bench/autocannon-leg.ts JOB_JSON`
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { LoadJob } from './load-generator.js'

/** The part of autocannon's API used here; the package ships no types. */
type Autocannon = (
  options: object,
  done: (error: Error | null, result: { errors: number; timeouts: number }) => void,
) => {
  on(
    event: 'response',
    listener: (client: unknown, status: number, bytes: number, ms: number) => void,
  ): void
  stop(): void
}

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob & {
  connections: number
  durationS: number
}
const lines = readFileSync(job.tokens.path, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => line.split(' '))
const url = new URL(job.url)
// One cursor for all connections, as wrk's: a connection of its own cycling the whole file
// would send each new token once per connection, and all but the first would find it cached.
let cursor = job.tokens.next
const latenciesMs: number[] = []
let statusErrors = 0
const startedAt = performance.now()

const instance = autocannon(
  {
    url: url.origin,
    connections: job.connections,
    duration: job.durationS,
    timeout: 10,
    requests: [
      {
        method: 'GET',
        path: url.pathname,
        setupRequest(request: { headers: Record<string, string> }) {
          const [token, etag] = lines[cursor % lines.length] ?? []
          cursor += 1
          Object.assign(request.headers, job.headers, { authorization: `Bearer ${token}` })
          if (etag !== undefined) request.headers['if-none-match'] = etag
          return request
        },
      },
    ],
  },
  (error, result) => {
    if (error) throw error
    latenciesMs.sort((a, b) => a - b)
    const percentileUs = (p: number) =>
      1000 * (latenciesMs[Math.ceil(p * latenciesMs.length) - 1] ?? Number.NaN)
    const line = {
      requests: latenciesMs.length,
      durationUs: Math.round((performance.now() - startedAt) * 1000),
      p50Us: percentileUs(0.5),
      p99Us: percentileUs(0.99),
      socketErrors: result.errors + result.timeouts,
      statusErrors,
      next: cursor,
      // autocannon does not tell a refused connection from a reset one.
      errorsByKind: { socket: result.errors, timeout: result.timeouts, status: statusErrors },
    }
    process.stdout.write(`bench-result ${JSON.stringify(line)}\n`)
  },
)
instance.on('response', (_client, status, _bytes, ms) => {
  latenciesMs.push(ms)
  if (status >= 400) statusErrors += 1
})
process.once('SIGINT', () => instance.stop())
