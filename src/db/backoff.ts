/**
 * Capped exponential backoff with jitter, reset on success: attempt 1 waits
 * up to 100 ms, then 200 ms, 400 ms, 800 ms, and at most 1 s from then on.
 * The cap is low on purpose: a database back from an outage is tried again
 * within a second, so that a commit made then is served within two
 * (docs/operations.md, "When things fail"). Jitter spreads the retries of
 * many replicas so that a recovering database is not hit by all at once.
 */
const BACKOFF_BASE_MS = 100
const BACKOFF_CAP_MS = 1_000

export function computeBackoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1))
  // Never below a tenth of the ceiling, so retries do not collapse into a tight loop.
  return Math.round(ceiling * (0.1 + 0.9 * Math.random()))
}
