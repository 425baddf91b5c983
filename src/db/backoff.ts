/**
 * Capped exponential backoff with jitter: up to 100 ms, doubling to at most 1 s, so that a
 * database back from an outage is tried again within a second (docs/operations.md, "When things
 * fail"). Jitter keeps the replicas from retrying all at once.
 */
const BACKOFF_BASE_MS = 100
const BACKOFF_CAP_MS = 1_000

export function computeBackoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1))
  // Never below a tenth of the ceiling, so retries do not collapse into a tight loop.
  return Math.round(ceiling * (0.1 + 0.9 * Math.random()))
}
