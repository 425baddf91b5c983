import type { JWTPayload } from 'jose'
import type { ClaimPath } from '../config/config.js'
import { textTag } from '../http/content-tag.js'

/** What the request path needs from a verified token, computed once and cached with it. */
export interface VerifiedCaller {
  readonly sub: string
  /** Roles found at the roles paths: strings only, de-duplicated, sorted. */
  readonly roles: readonly string[]
  /** UTF-8 JSON of the response's `user` object, so handlers splice bytes instead of serializing. */
  readonly userBlock: Buffer
  /** The user block's content tag: feeds the response ETag without rehashing per request. */
  readonly userTag: string
  readonly expiresAtMs: number
}

/** Builds the caller from an already verified payload whose `sub` and `exp` were checked. */
export function buildVerifiedCaller(
  payload: JWTPayload & { sub: string; exp: number },
  rolesPaths: readonly ClaimPath[],
): VerifiedCaller {
  const roles = Object.freeze(readRoles(payload, rolesPaths))
  // Key order is fixed (README, HTTP API): the bytes, and so the ETag, must not vary.
  const userJson = JSON.stringify({
    sub: payload.sub,
    username: readOptionalString(payload.preferred_username),
    name: readOptionalString(payload.name),
    email: readOptionalString(payload.email),
    roles,
  })
  return Object.freeze({
    sub: payload.sub,
    roles,
    userBlock: Buffer.from(userJson, 'utf8'),
    userTag: textTag(userJson),
    expiresAtMs: payload.exp * 1000,
  })
}

/**
 * The union of the string arrays at the roles paths (`realm_access.roles` by
 * default; Keycloak puts a client's roles under `resource_access.<client>.roles`).
 * A path that is missing, or leads to something other than an array, adds no
 * roles rather than refusing the token: a user without roles still sees the
 * items that need none. Sorted, because the role-set key is built from them.
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
