import type { Logger } from 'pino'
import type { AuthError } from './errors.js'
import { decodeJsonSegment, type JsonObject, splitSignedSegments } from './token-segments.js'

/** Enough lines to diagnose a misconfiguration; a flood of bad tokens must not flood the logs. */
const MAX_LINES_PER_WINDOW = 10
const WINDOW_MS = 10_000
/** Decoded values are the caller's input: cap them so one token cannot write a huge line. */
const MAX_VALUE_CHARS = 200
const MAX_AUDIENCES = 10

/** One `warn` line per failed verification, rate-limited; suppressed lines counted per window. */
export function createFailureLog(options: {
  logger: Logger
  enabled: boolean
  now: () => number
}): { record(token: string, error: AuthError): void; close(): void } {
  const { logger, now } = options
  if (!options.enabled) return { record() {}, close() {} }

  let windowStartMs = now()
  let linesInWindow = 0
  let suppressed = 0
  // Reports the suppressed count even when the flood stops and no failure follows.
  let rollTimer: NodeJS.Timeout | undefined

  function rollWindow(): void {
    clearTimeout(rollTimer)
    rollTimer = undefined
    if (suppressed > 0) {
      logger.warn(
        { suppressed, windowS: WINDOW_MS / 1000 },
        'token verification failures not logged (rate limit)',
      )
    }
    windowStartMs = now()
    linesInWindow = 0
    suppressed = 0
  }

  return {
    record(token, error) {
      if (now() - windowStartMs >= WINDOW_MS) rollWindow()
      if (linesInWindow >= MAX_LINES_PER_WINDOW) {
        suppressed += 1
        rollTimer ??= setTimeout(rollWindow, windowStartMs + WINDOW_MS - now()).unref()
        return
      }
      linesInWindow += 1
      logger.warn(
        { result: error.result, error: error.underlying, ...describeTokenForLog(token) },
        'token verification failed',
      )
    },
    close() {
      clearTimeout(rollTimer)
      rollTimer = undefined
    },
  }
}

/**
 * Only the header's kid/alg/typ and the payload's iss/aud/azp/sub/exp/iat, decoded by hand; never
 * the signature. Only for lines the rate limit lets through; fastify bounds a token's length.
 */
export function describeTokenForLog(token: string): {
  header?: Record<string, unknown>
  claims?: Record<string, unknown>
} {
  const segments = splitSignedSegments(token)
  const header = decodeJsonSegment(segments.header)
  const payload = segments.count >= 2 ? decodeJsonSegment(segments.payload) : undefined
  return {
    ...(header && { header: pick(header, ['kid', 'alg', 'typ'], readShortString) }),
    ...(payload && {
      claims: {
        ...pick(payload, ['iss', 'azp', 'sub'], readShortString),
        ...pickAudience(payload),
        ...pick(payload, ['exp', 'iat'], readFiniteNumber),
      },
    }),
  }
}

/** The named values that `read` keeps, as it returns them. */
function pick<T>(
  source: JsonObject,
  names: readonly string[],
  read: (value: unknown) => T | undefined,
): Record<string, T> {
  const picked: Record<string, T> = {}
  for (const name of names) {
    const value = read(source[name])
    if (value !== undefined) picked[name] = value
  }
  return picked
}

function readShortString(value: unknown): string | undefined {
  return typeof value === 'string' ? value.slice(0, MAX_VALUE_CHARS) : undefined
}

function readFiniteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

function pickAudience(source: JsonObject): { aud?: string | string[] } {
  const { aud } = source
  if (!Array.isArray(aud)) return pick(source, ['aud'], readShortString)
  return { aud: aud.flatMap((entry) => readShortString(entry) ?? []).slice(0, MAX_AUDIENCES) }
}
