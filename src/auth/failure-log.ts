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
    ...(header && { header: pickStrings(header, ['kid', 'alg', 'typ']) }),
    ...(payload && {
      claims: {
        ...pickStrings(payload, ['iss', 'azp', 'sub']),
        ...pickAudience(payload),
        ...pickNumbers(payload, ['exp', 'iat']),
      },
    }),
  }
}

function pickStrings(source: JsonObject, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {}
  for (const name of names) {
    const value = source[name]
    if (typeof value === 'string') picked[name] = value.slice(0, MAX_VALUE_CHARS)
  }
  return picked
}

function pickNumbers(source: JsonObject, names: readonly string[]): Record<string, number> {
  const picked: Record<string, number> = {}
  for (const name of names) {
    const value = source[name]
    if (typeof value === 'number' && Number.isFinite(value)) picked[name] = value
  }
  return picked
}

function pickAudience(source: JsonObject): { aud?: string | string[] } {
  const { aud } = source
  if (typeof aud === 'string') return { aud: aud.slice(0, MAX_VALUE_CHARS) }
  if (!Array.isArray(aud)) return {}
  return {
    aud: aud
      .filter((entry): entry is string => typeof entry === 'string')
      .slice(0, MAX_AUDIENCES)
      .map((entry) => entry.slice(0, MAX_VALUE_CHARS)),
  }
}
