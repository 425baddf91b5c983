import { hash } from 'node:crypto'

/**
 * A short, content-derived tag: the same bytes give the same tag on every
 * instance and after every restart. 120 bits of SHA-256 are far more than
 * enough to tell versions of one response apart, and keep ETags short.
 */
export function contentTag(content: string | Buffer): string {
  return hash('sha256', content, 'base64url').slice(0, 20)
}
