import type { JWTPayload } from 'jose'
import type { ClaimPath } from '../config/config.js'

/** What a verified access token says of its caller. */
export interface VerifiedClaims {
  readonly sub: string
  /** `preferred_username`; null when absent or not a string. */
  readonly username: string | null
  readonly name: string | null
  readonly email: string | null
  /** Roles found at the roles paths: strings only, de-duplicated, sorted. */
  readonly roles: readonly string[]
  readonly expiresAtMs: number
}

/** Reads the claims of an already verified payload whose `sub` and `exp` were checked. */
export function readVerifiedClaims(
  payload: JWTPayload & { sub: string; exp: number },
  rolesPaths: readonly ClaimPath[],
): VerifiedClaims {
  return Object.freeze({
    sub: payload.sub,
    username: readOptionalString(payload.preferred_username),
    name: readOptionalString(payload.name),
    email: readOptionalString(payload.email),
    roles: Object.freeze(readRoles(payload, rolesPaths)),
    expiresAtMs: payload.exp * 1000,
  })
}

/**
 * The union of the string arrays at the roles paths. A path that is missing or leads to no array
 * adds no roles rather than refusing the token: a user without roles still sees what needs none.
 * Sorted, because the role-set key is built from them.
 */
export function readRoles(payload: JWTPayload, rolesPaths: readonly ClaimPath[]): string[] {
  const roles = new Set<string>()
  for (const path of rolesPaths) {
    const found = followPath(payload, path)
    if (!Array.isArray(found)) continue
    for (const role of found) if (typeof role === 'string') roles.add(role)
  }
  return [...roles].sort()
}

/** Own properties only: a step named `__proto__` or `constructor` finds nothing. */
function followPath(payload: JWTPayload, path: ClaimPath): unknown {
  let value: unknown = payload
  for (const step of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined
    value = (value as Record<string, unknown>)[step]
  }
  return value
}

function readOptionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null
}
