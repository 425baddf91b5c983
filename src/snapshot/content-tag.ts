import { hash } from 'node:crypto'

/**
 * A content-derived tag, the same on every instance and after every restart. 20 base64url
 * characters: 120 bits of SHA-256 tell versions of one response apart and keep ETags short.
 */
export function contentTag(content: string | Buffer): string {
  return hash('sha256', content, 'base64url').slice(0, 20)
}
