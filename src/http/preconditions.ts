/**
 * `If-None-Match` (RFC 9110 section 13.1.2): `*`, or a list of entity tags
 * compared weakly, so `W/"x"` matches `"x"`. `etag` is our strong tag,
 * quotes included.
 */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  // The common case, a browser sending back the tag it was given, costs one comparison.
  if (header === etag) return true
  for (const part of header.split(',')) {
    let candidate = part.trim()
    if (candidate === '*') return true
    if (candidate.startsWith('W/')) candidate = candidate.slice(2)
    if (candidate === etag) return true
  }
  return false
}
