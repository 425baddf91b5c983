/** Every metric docs/operations.md lists: at the top of src/ as every concern records into it. */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

export type Metrics = ReturnType<typeof createMetrics>

/** The `result` label values of shell_token_verifications_total. */
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

/** The `result` label values of shell_database_attempts_total. */
const DATABASE_ATTEMPT_RESULTS = ['success', 'error', 'in_recovery'] as const

/** Why an event stream ended, as shell_event_streams_ended_total counts it. */
const STREAM_END_REASONS = ['client', 'expired', 'gone', 'overflow', 'shutdown'] as const
export type StreamEndReason = (typeof STREAM_END_REASONS)[number]

/**
 * prom-client's defaults also export sums of by-type gauges named `…_total`, a suffix Prometheus
 * reserves for counters, which `promtool check metrics` refuses (prom-client issue 283). The
 * by-type gauges stay: `sum without (type) (nodejs_active_handles)` is the same number.
 */
const MISNAMED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

/** A registry of its own, not prom-client's global one: tests build many services in a process. */
export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry()
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry })
    for (const name of MISNAMED_DEFAULT_METRICS) registry.removeSingleMetric(name)
  }
  const registers = [registry]
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter({ name, help, labelNames, registers })
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers })
  const histogram = <L extends string>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ) => new Histogram({ name, help, buckets, labelNames, registers })
  const metrics = {
    registry,
    // Responses are precomputed bytes: most take well under a millisecond.
    httpRequestDuration: histogram(
      'shell_http_request_duration_seconds',
      'Time from request to response, by route template, method and status.',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      ['route', 'method', 'status_code'],
    ),
    snapshotLoaded: gauge(
      'shell_snapshot_loaded',
      '1 once a snapshot is loaded and served, else 0.',
    ),
    snapshotAge: gauge(
      'shell_snapshot_age_seconds',
      'Seconds since the snapshot in service was loaded.',
    ),
    snapshotFromFile: gauge(
      'shell_snapshot_from_file',
      '1 while the snapshot in service is the one this instance started from its file (SNAPSHOT_FILE), the database not reached since, else 0.',
    ),
    snapshotFileWrites: counter(
      'shell_snapshot_file_writes_total',
      'Writes of the snapshot to SNAPSHOT_FILE, by result.',
      ['result'],
    ),
    snapshotReloads: counter(
      'shell_snapshot_reloads_total',
      'Snapshot reloads from the database, by result.',
      ['result'],
    ),
    snapshotReloadDuration: histogram(
      'shell_snapshot_reload_duration_seconds',
      'Time to read the database and build a snapshot.',
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    tokenVerifications: counter(
      'shell_token_verifications_total',
      'Bearer token verifications (cache misses), by result.',
      ['result'],
    ),
    tokenCache: counter('shell_token_cache_total', 'Verified-token cache look-ups, by result.', [
      'result',
    ]),
    feedListening: gauge(
      'shell_feed_listening',
      '1 while LISTEN is in place on the listening connection and it has not been found deaf, else 0.',
    ),
    databaseAttempts: counter(
      'shell_database_attempts_total',
      'Attempts to put LISTEN in place (task=listen) and to prepare the database at start (task=prepare), by result: success, error (unreachable, refused), in_recovery (the server found was a hot standby). Logged only when the state changes.',
      ['task', 'result'],
    ),
    // From a standby that has caught up (0, or a few ms of polling) to the 10 s the wait is
    // capped at: a wait that gave up is just over 10 and counts in +Inf only.
    feedReplayWait: histogram(
      'shell_feed_replay_wait_seconds',
      'Time a reload asked for by a notification waited for the standby it reads to replay the commit (zero: caught up already); only when reading from a standby. Past 10 it gave up waiting.',
      [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    jwksFetches: counter(
      'shell_jwks_fetches_total',
      'Fetches of the identity provider key set (and discovery), by result.',
      ['result'],
    ),
    eventStreams: gauge('shell_event_streams', 'Event streams open on this instance.'),
    // The limit beside the count, so an alert can compare them without knowing the setting.
    eventStreamsMax: gauge(
      'shell_event_streams_max',
      'EVENT_STREAMS_MAX: event streams this instance accepts.',
    ),
    eventsSent: counter('shell_events_sent_total', 'Events sent on event streams, by event.', [
      'event',
    ]),
    httpShed: counter(
      'shell_http_shed_total',
      'API requests answered at once with 503 because the work of the instance stood in a queue, by route template.',
      ['route'],
    ),
    // Beside the counter: whether the rule sheds now (http/standing-queue.ts).
    httpQueueStanding: gauge(
      'shell_http_queue_standing',
      '1 while the API work of this instance stands in a queue (no short turn of its event loop for a second), so that requests met late in a turn are shed; else 0.',
    ),
    eventStreamsEnded: counter(
      'shell_event_streams_ended_total',
      'Event streams ended, by reason: client, expired (token exp), gone (app deleted), overflow (client not reading), shutdown.',
      ['reason'],
    ),
  } as const
  // Start every labelled series at zero so dashboards and alerts see them before the first event;
  // prom-client starts a gauge without labels at zero itself.
  for (const result of ['success', 'error']) {
    metrics.snapshotReloads.inc({ result }, 0)
    metrics.jwksFetches.inc({ result }, 0)
    metrics.snapshotFileWrites.inc({ result }, 0)
  }
  for (const task of ['listen', 'prepare'])
    for (const result of DATABASE_ATTEMPT_RESULTS) metrics.databaseAttempts.inc({ task, result }, 0)
  for (const result of TOKEN_VERIFICATION_RESULTS) metrics.tokenVerifications.inc({ result }, 0)
  for (const result of ['hit', 'miss']) metrics.tokenCache.inc({ result }, 0)
  for (const event of ['shell', 'gone']) metrics.eventsSent.inc({ event }, 0)
  for (const reason of STREAM_END_REASONS) metrics.eventStreamsEnded.inc({ reason }, 0)
  return metrics
}
