import type { IncomingMessage } from 'node:http'
import type { Registry } from 'prom-client'

/** Time from request to response, by route template, method and status. */
export interface RequestDurationHistogram {
  observe(route: string, method: string, statusCode: number, seconds: number): void
}

/** A request with the time it arrived, stamped by the server before fastify sees it. */
export interface ReceivedRequest extends IncomingMessage {
  receivedAtMs?: number
}

/** `performance.now()` when the request arrived; now, if it was never stamped. */
export function secondsSinceReceived(request: ReceivedRequest): number {
  const now = performance.now()
  return (now - (request.receivedAtMs ?? now)) / 1000
}

/** Responses are precomputed bytes: most take well under a millisecond. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1] as const
const NAME = 'shell_http_request_duration_seconds'

interface Series {
  readonly labels: { route: string; method: string; status_code: string }
  /** Observations per bucket, not cumulative; the last slot is above every bound. */
  readonly counts: Float64Array
  sum: number
  count: number
}

/**
 * shell_http_request_duration_seconds as plain bucket counts, one series per
 * route, method and status, found through nested maps of the values
 * themselves: an observation is two or three Map lookups and two additions.
 * prom-client's Histogram hashes a label object per observation, which costs
 * more than the shell's whole answer; this one is read and laid out only when
 * /metrics is scraped, in prom-client's own format.
 */
export function createRequestDurationHistogram(registry: Registry): RequestDurationHistogram {
  const seriesByRoute = new Map<string, Map<string, Map<number, Series>>>()

  function seriesOf(route: string, method: string, statusCode: number): Series {
    let byMethod = seriesByRoute.get(route)
    if (byMethod === undefined) {
      byMethod = new Map()
      seriesByRoute.set(route, byMethod)
    }
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) {
      byStatus = new Map()
      byMethod.set(method, byStatus)
    }
    let series = byStatus.get(statusCode)
    if (series === undefined) {
      series = {
        labels: { route, method, status_code: String(statusCode) },
        counts: new Float64Array(BUCKETS.length + 1),
        sum: 0,
        count: 0,
      }
      byStatus.set(statusCode, series)
    }
    return series
  }

  registry.registerMetric({
    name: NAME,
    help: 'Time from request to response, by route template, method and status.',
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({
      name: NAME,
      help: 'Time from request to response, by route template, method and status.',
      type: 'histogram',
      aggregator: 'sum',
      values: [...seriesByRoute.values()].flatMap((byMethod) =>
        [...byMethod.values()].flatMap((byStatus) => [...byStatus.values()].flatMap(layOut)),
      ),
    }),
    reset() {
      seriesByRoute.clear()
    },
  } as unknown as Parameters<Registry['registerMetric']>[0])

  return {
    observe(route, method, statusCode, seconds) {
      const series = seriesOf(route, method, statusCode)
      let bucket = 0
      while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket += 1
      series.counts[bucket] = (series.counts[bucket] as number) + 1
      series.sum += seconds
      series.count += 1
    },
  }
}

/** One series as prom-client lays out a histogram: cumulative buckets, +Inf, sum, count. */
function layOut(series: Series) {
  const values: { metricName: string; labels: Record<string, string | number>; value: number }[] =
    []
  let cumulative = 0
  BUCKETS.forEach((bound, index) => {
    cumulative += series.counts[index] as number
    values.push({
      metricName: `${NAME}_bucket`,
      labels: { ...series.labels, le: bound },
      value: cumulative,
    })
  })
  values.push({
    metricName: `${NAME}_bucket`,
    labels: { ...series.labels, le: '+Inf' },
    value: series.count,
  })
  values.push({ metricName: `${NAME}_sum`, labels: series.labels, value: series.sum })
  values.push({ metricName: `${NAME}_count`, labels: series.labels, value: series.count })
  return values
}
