import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import {
  createRequestDurationHistogram,
  type RequestDurationHistogram,
} from './request-duration-histogram.js'

/**
 * A labelled counter whose increments are plain additions, handed to
 * prom-client when /metrics is scraped: the request path counts every
 * request, and prom-client's own `inc` hashes a label object each time.
 */
export type TallyCounter<Value extends string> = Counter<string> & {
  tally(value: Value): void
}

/** Every metric the contract names, in one registry per service instance. */
export interface Metrics {
  readonly registry: Registry
  readonly httpRequestDuration: RequestDurationHistogram
  readonly snapshotLoaded: Gauge
  readonly snapshotAge: Gauge
  readonly snapshotReloads: Counter<'result'>
  readonly snapshotReloadDuration: Histogram
  readonly tokenVerifications: TallyCounter<TokenVerificationResult>
  readonly tokenCache: TallyCounter<'hit' | 'miss'>
  readonly feedListening: Gauge
  readonly jwksFetches: Counter<'result'>
  readonly eventStreams: Gauge
  readonly eventStreamsMax: Gauge
  readonly eventsSent: Counter<'event'>
  readonly eventStreamsEnded: Counter<'reason'>
}

/** The `result` label values of shell_token_verifications_total, as the contract lists them. */
const TOKEN_VERIFICATION_RESULTS = [
  'ok',
  'expired',
  'invalid_signature',
  'unknown_kid',
  'invalid_audience',
  'invalid_issuer',
  'malformed',
  'keys_unavailable',
] as const

export type TokenVerificationResult = (typeof TOKEN_VERIFICATION_RESULTS)[number]

/** Why an event stream ended, as shell_event_streams_ended_total counts it. */
const STREAM_END_REASONS = ['client', 'expired', 'gone', 'overflow', 'shutdown'] as const
export type StreamEndReason = (typeof STREAM_END_REASONS)[number]

/**
 * prom-client's defaults also export the sum of three of their by-type gauges
 * as a gauge named `…_total`, a suffix that Prometheus reserves for counters,
 * so `promtool check metrics` refuses them (prom-client issue 283, still open).
 * The by-type gauges stay: `sum without (type) (nodejs_active_handles)` is the
 * same number.
 */
const MISNAMED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

/**
 * A registry of its own (not prom-client's global one), so that tests can build
 * many services in one process without "metric already registered" errors.
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry()
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry })
    for (const name of MISNAMED_DEFAULT_METRICS) registry.removeSingleMetric(name)
  }
  const metrics: Metrics = {
    registry,
    httpRequestDuration: createRequestDurationHistogram(registry),
    snapshotLoaded: new Gauge({
      name: 'shell_snapshot_loaded',
      help: '1 once a snapshot is loaded and served, else 0.',
      registers: [registry],
    }),
    snapshotAge: new Gauge({
      name: 'shell_snapshot_age_seconds',
      help: 'Seconds since the snapshot in service was loaded.',
      registers: [registry],
    }),
    snapshotReloads: new Counter({
      name: 'shell_snapshot_reloads_total',
      help: 'Snapshot reloads from the database, by result.',
      labelNames: ['result'],
      registers: [registry],
    }),
    snapshotReloadDuration: new Histogram({
      name: 'shell_snapshot_reload_duration_seconds',
      help: 'Time to read the database and build a snapshot.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    tokenVerifications: createTallyCounter(registry, {
      name: 'shell_token_verifications_total',
      help: 'Bearer token verifications (cache misses), by result.',
      labelName: 'result',
      values: TOKEN_VERIFICATION_RESULTS,
    }),
    tokenCache: createTallyCounter(registry, {
      name: 'shell_token_cache_total',
      help: 'Verified-token cache look-ups, by result.',
      labelName: 'result',
      values: ['hit', 'miss'],
    }),
    feedListening: new Gauge({
      name: 'shell_feed_listening',
      help: '1 while a notification sent through the pool comes back on the LISTEN connection, else 0.',
      registers: [registry],
    }),
    jwksFetches: new Counter({
      name: 'shell_jwks_fetches_total',
      help: 'Fetches of the identity provider key set (and discovery), by result.',
      labelNames: ['result'],
      registers: [registry],
    }),
    eventStreams: new Gauge({
      name: 'shell_event_streams',
      help: 'Event streams open on this instance.',
      registers: [registry],
    }),
    // The limit beside the count, so an alert can compare them without knowing the setting.
    eventStreamsMax: new Gauge({
      name: 'shell_event_streams_max',
      help: 'EVENT_STREAMS_MAX: event streams this instance accepts.',
      registers: [registry],
    }),
    eventsSent: new Counter({
      name: 'shell_events_sent_total',
      help: 'Events sent on event streams, by event.',
      labelNames: ['event'],
      registers: [registry],
    }),
    eventStreamsEnded: new Counter({
      name: 'shell_event_streams_ended_total',
      help: 'Event streams ended, by reason: client, expired (token exp), gone (app deleted), overflow (client not reading), shutdown.',
      labelNames: ['reason'],
      registers: [registry],
    }),
  }
  // Start every labelled series at zero so dashboards and alerts see them before the first event.
  for (const result of ['success', 'error']) {
    metrics.snapshotReloads.inc({ result }, 0)
    metrics.jwksFetches.inc({ result }, 0)
  }
  for (const event of ['shell', 'gone']) metrics.eventsSent.inc({ event }, 0)
  for (const reason of STREAM_END_REASONS) metrics.eventStreamsEnded.inc({ reason }, 0)
  metrics.eventStreams.set(0)
  metrics.snapshotLoaded.set(0)
  metrics.feedListening.set(0)
  return metrics
}

function createTallyCounter<Value extends string>(
  registry: Registry,
  options: {
    name: string
    help: string
    labelName: string
    /** Every value the label takes; each series exists, at zero, from the start. */
    values: readonly Value[]
  },
): TallyCounter<Value> {
  const tallies = new Map<string, number>(options.values.map((value) => [value, 0]))
  const counter = new Counter({
    name: options.name,
    help: options.help,
    labelNames: [options.labelName],
    registers: [registry],
    collect() {
      this.reset()
      for (const [value, tally] of tallies) this.inc({ [options.labelName]: value }, tally)
    },
  })
  return Object.assign(counter, {
    tally(value: Value) {
      tallies.set(value, (tallies.get(value) ?? 0) + 1)
    },
  })
}
