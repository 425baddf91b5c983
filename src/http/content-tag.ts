import { createHash, hash } from 'node:crypto'

/**
 * A short, content-derived tag: the same bytes give the same tag on every
 * instance and after every restart. 120 bits of SHA-256 are far more than
 * enough to tell versions of one response apart, and keep ETags short.
 */
export function contentTag(...parts: readonly (Buffer | string)[]): string {
  const digest = createHash('sha256')
  for (const part of parts) {
    digest.update(part)
    // A separator, so that ("ab", "c") and ("a", "bc") differ.
    digest.update('\0')
  }
  return digest.digest('base64url').slice(0, 20)
}

/**
 * contentTag(text) for a single string, in one call: no Hash object to
 * create and feed, which matters on the new-token path. Same bytes, same tag.
 */
export function textTag(text: string): string {
  return hash('sha256', `${text}\0`, 'base64url').slice(0, 20)
}
