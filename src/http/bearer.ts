/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 9110
 * section 11.1), `''` for a Bearer header without one, null for no Bearer header at all.
 */
export function readBearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined || authorization.length < 6) return null
  const scheme = authorization.slice(0, 6)
  if (scheme !== 'Bearer' && scheme.toLowerCase() !== 'bearer') return null
  const rest = authorization.slice(6)
  if (rest !== '' && rest[0] !== ' ') return null
  return rest.trim()
}

/** Header-safe text for `error_description`: printable ASCII without quotes or backslashes. */
export function toHeaderText(text: string): string {
  return text.replace(/[^\x20-\x7e]|["\\]/g, "'").slice(0, 200)
}
