import autocannon, { type Instance, type Request } from 'autocannon'
import { LatencyHistogram, type LatencySummary, type SparseHistogram } from './latency-histogram.js'

/** One leg: a warm-up whose numbers are dropped, then the measured run. */
export interface LoadJob {
  /** Full URL: origin and path. */
  readonly url: string
  readonly connections: number
  readonly warmupS: number
  readonly durationS: number
  /** Name of a token set; each request takes the set's next token (`Authorization: Bearer …`). */
  readonly tokenSet: string
  /** Send `If-None-Match` with the tag stored next to each token of the set. */
  readonly conditional?: boolean
  /**
   * `per-connection` (default): every connection cycles through the whole set
   * of prebuilt requests, which costs the load generator nothing per request.
   * `shared`: one cursor across connections, so each token is sent once per
   * cycle of the set (fresh tokens), at the price of building every request.
   */
  readonly tokenOrder?: 'per-connection' | 'shared'
  /** Requests per second over all connections (open loop); unset: as fast as answers come. */
  readonly overallRate?: number
}

export interface LoadResult {
  readonly requests: number
  /** Responses during the warm-up, which the numbers leave out. */
  readonly warmupRequests: number
  readonly elapsedS: number
  readonly requestsPerSecond: number
  readonly statuses: Record<string, number>
  readonly errors: number
  readonly timeouts: number
  readonly bytesPerResponse: number
  readonly latency: LatencySummary
  readonly histogram: SparseHistogram
}

interface TokenSet {
  readonly tokens: readonly string[]
  readonly etags: readonly string[] | undefined
  /** Where the next request picks up; kept across legs, so a pool of fresh tokens is not replayed early. */
  cursor: number
}

/**
 * Runs autocannon legs against token sets held in this process. The same
 * code runs in the load-generator child (the default) and inline.
 */
export function createLoadRunner() {
  const tokenSets = new Map<string, TokenSet>()
  let current: Instance | undefined

  function setTokens(name: string, tokens: readonly string[], etags?: readonly string[]): void {
    tokenSets.set(name, { tokens, etags, cursor: 0 })
  }

  async function runJob(job: LoadJob): Promise<LoadResult> {
    const warmupRequests = job.warmupS > 0 ? (await runOnce(job, job.warmupS)).requests : 0
    return { ...(await runOnce(job, job.durationS)), warmupRequests }
  }

  function runOnce(job: LoadJob, durationS: number): Promise<LoadResult> {
    const set = tokenSets.get(job.tokenSet)
    if (set === undefined) throw new Error(`no token set ${job.tokenSet}`)
    const url = new URL(job.url)
    const histogram = new LatencyHistogram()
    const statuses: Record<string, number> = {}
    let bytes = 0
    const startedAt = performance.now()
    return new Promise((resolve, reject) => {
      const instance = autocannon(
        {
          url: url.origin,
          connections: job.connections,
          pipelining: 1,
          duration: durationS,
          ...(job.overallRate !== undefined && { overallRate: job.overallRate }),
          timeout: 10,
          requests:
            job.tokenOrder === 'shared'
              ? sharedCursorRequests(set, job, url)
              : prebuiltRequests(set, job, url),
        },
        (error, result) => {
          current = undefined
          if (error) return reject(error)
          const elapsedS = (performance.now() - startedAt) / 1000
          resolve({
            requests: histogram.count,
            warmupRequests: 0,
            elapsedS: round(elapsedS),
            requestsPerSecond: round(histogram.count / elapsedS),
            statuses,
            errors: result.errors,
            timeouts: result.timeouts,
            bytesPerResponse: histogram.count === 0 ? 0 : Math.round(bytes / histogram.count),
            latency: histogram.summary(),
            histogram: histogram.toSparse(),
          })
        },
      )
      current = instance
      instance.on('response', (_client, statusCode, responseBytes, responseTimeMs) => {
        histogram.record(responseTimeMs)
        statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
        bytes += responseBytes
      })
    })
  }

  return {
    setTokens,
    runJob,
    /** Ends the leg in progress early; its result is still delivered. */
    stop(): void {
      current?.stop()
    },
  }
}

export type LoadRunner = ReturnType<typeof createLoadRunner>

function headersFor(set: TokenSet, index: number, job: LoadJob): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Bearer ${set.tokens[index]}` }
  const etag = job.conditional ? set.etags?.[index] : undefined
  if (etag !== undefined) headers['if-none-match'] = etag
  return headers
}

function prebuiltRequests(set: TokenSet, job: LoadJob, url: URL): Request[] {
  return set.tokens.map((_token, index) => ({
    method: 'GET',
    path: url.pathname,
    headers: headersFor(set, index, job),
  }))
}

function sharedCursorRequests(set: TokenSet, job: LoadJob, url: URL): Request[] {
  return [
    {
      method: 'GET',
      path: url.pathname,
      setupRequest(request) {
        const index = set.cursor
        set.cursor = (index + 1) % set.tokens.length
        Object.assign(request.headers, headersFor(set, index, job))
        return request
      },
    },
  ]
}

function round(value: number): number {
  return Math.round(value * 100) / 100
}
