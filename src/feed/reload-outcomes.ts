import type { Logger } from 'pino'
import { computeBackoffMs } from '../db/backoff.js'
import { databaseErrorFields, describeDatabaseError } from '../db/database-errors.js'
import { createOutageLog } from '../db/outage-log.js'
import type { Metrics } from '../metrics.js'

/** What the feed's reloads came to: counted and timed in metrics, an outage logged once. */
export interface ReloadOutcomes {
  succeeded(startedAt: number): void
  /** A reload failed (`kept`: a snapshot stays in service); returns the backoff before the next. */
  failed(error: unknown, startedAt: number, kept: boolean): number
  /** No LISTEN could be put in place: /readyz says why, until a reload says otherwise. */
  listenFailed(error: unknown): void
  /** Why no snapshot is loaded yet, for /readyz: the last error, if an attempt failed. */
  notReadyReason(): string
}

export function createReloadOutcomes(deps: {
  readonly logger: Logger
  readonly metrics: Metrics
  /** The clock (ms) of the outage's log lines (db/outage-log.ts); tests pass their own. */
  readonly now?: (() => number) | undefined
}): ReloadOutcomes {
  const { metrics } = deps
  const outage = createOutageLog({
    logger: deps.logger,
    ...(deps.now && { now: deps.now }),
    messages: {
      down: 'snapshot reloads fail; keeping the previous snapshot and retrying within a second, quietly (shell_snapshot_reloads_total counts the attempts)',
      still: 'snapshot reloads still fail; keeping the previous snapshot',
      back: 'snapshot reloads work again',
    },
  })
  let lastError: string | null = null
  let failures = 0 // in a row: the backoff grows with them
  const observe = (result: 'success' | 'error', startedAt: number) => {
    metrics.snapshotReloads.inc({ result })
    metrics.snapshotReloadDuration.observe((performance.now() - startedAt) / 1000)
  }
  return {
    succeeded(startedAt) {
      failures = 0
      lastError = null
      outage.succeeded()
      observe('success', startedAt)
    },
    failed(error, startedAt, kept) {
      observe('error', startedAt)
      failures += 1
      lastError = describeDatabaseError(error)
      const retryInMs = computeBackoffMs(failures)
      outage.failed({ ...databaseErrorFields(error), retryInMs, kept })
      return retryInMs
    },
    listenFailed(error) {
      lastError ??= describeDatabaseError(error)
    },
    notReadyReason: () =>
      lastError === null ? 'loading the first snapshot' : `database unavailable (${lastError})`,
  }
}
