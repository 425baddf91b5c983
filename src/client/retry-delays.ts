/**
 * How long the client waits before it asks again (docs/client.md, "When
 * things fail").
 */

/** Retries after a failure wait 1 s, 2 s, 4 s... up to 30 s, with jitter. */
const FIRST_RETRY_MS = 1_000
const LAST_RETRY_MS = 30_000
/** A Retry-After longer than this is cut to it: a page should not sit a minute without trying. */
const MAX_RETRY_AFTER_MS = 60_000
/**
 * A stream the service ended (a shutdown, the token's exp) is reopened
 * within this, at random: the clients of an instance that shuts down then
 * reach the others spread over two seconds, not in the same one.
 */
const REOPEN_SPREAD_MS = 2_000

/** The wait before the next try after `failures` failures in a row: doubling, capped, jittered. */
export function backoff(failures: number): number {
  const ceiling = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures)
  return Math.max(FIRST_RETRY_MS, ceiling * (0.5 + Math.random() / 2))
}

/** The wait before a stream that the service ended is opened again. */
export function spreadReopening(): number {
  return Math.random() * REOPEN_SPREAD_MS
}

/**
 * Retry-After in seconds, as the service sends it (a date, which it never
 * sends, counts as none), at most 60 s; at least 1 s, so that a service
 * saying 0 again and again is not asked in a loop.
 */
export function readRetryAfter(response: Response): number | undefined {
  const seconds = Number(response.headers.get('retry-after') || Number.NaN)
  if (Number.isNaN(seconds)) return undefined
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(FIRST_RETRY_MS, seconds * 1000))
}
