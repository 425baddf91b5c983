/**
 * The `sub` claim of a JWT's payload, read, not verified: it only picks the
 * stored shell, and the service checks the token on every request.
 */
export function readTokenSub(token: string): string | undefined {
  try {
    const payload = (token.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/')
    const bytes = Uint8Array.from(atob(payload), (char) => char.charCodeAt(0))
    const { sub } = JSON.parse(new TextDecoder().decode(bytes)) as { sub?: unknown }
    return typeof sub === 'string' ? sub : undefined
  } catch {
    return undefined
  }
}
