/** A JSON object decoded from one base64url segment of a compact JWT. */
export type JsonObject = Readonly<Record<string, unknown>>

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** Base64url without padding, as a compact JWT's segments are written (RFC 7515 section 2). */
export function isBase64urlSegment(segment: string | undefined): segment is string {
  return segment !== undefined && BASE64URL.test(segment)
}

/** Base64url of a JSON object, or undefined (never throws), so it is safe on hostile input. */
export function decodeJsonSegment(segment: string | undefined): JsonObject | undefined {
  if (!isBase64urlSegment(segment)) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    return value as JsonObject
  } catch {
    return undefined
  }
}

/** The header and payload segments of a compact JWS; the signature segment is never handed out. */
export function splitSignedSegments(token: string): {
  header?: string
  payload?: string
  count: number
} {
  const parts = token.split('.', 4)
  return { header: parts[0], payload: parts[1], count: parts.length }
}
