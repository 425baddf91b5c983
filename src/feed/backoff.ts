/**
 * Capped exponential backoff with full jitter, reset on success:
 * attempt 1 waits up to 100 ms, then 200 ms, 400 ms, 800 ms, 1.6 s, 3.2 s,
 * 6.4 s, and at most 10 s from then on. Jitter spreads the retries of many
 * replicas so that a recovering database is not hit by all of them at once.
 */
export const BACKOFF_BASE_MS = 100
export const BACKOFF_CAP_MS = 10_000

export function computeBackoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1))
  // Never below a tenth of the ceiling, so retries do not collapse into a tight loop.
  return Math.round(ceiling * (0.1 + 0.9 * random()))
}
