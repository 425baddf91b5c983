import type { JWTPayload } from 'jose'
import { textTag } from '../content-tag.js'

/** What the request path needs from a verified token, computed once and cached with it. */
export interface VerifiedCaller {
  readonly sub: string
  /** Realm roles from the roles claim: strings only, de-duplicated, sorted. */
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
  rolesClaim: string,
): VerifiedCaller {
  const roles = Object.freeze(readRoles(payload, rolesClaim))
  // Key order is part of the contract: the bytes, and so the ETag, must not vary.
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
 * Follows the dot path (`realm_access.roles` by default). A missing claim, or
 * one that is not an array, means no roles rather than a refused token: a user
 * without realm roles still sees the items that need none.
 */
export function readRoles(payload: JWTPayload, rolesClaim: string): string[] {
  let value: unknown = payload
  for (const step of rolesClaim.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return []
    value = (value as Record<string, unknown>)[step]
  }
  if (!Array.isArray(value)) return []
  const roles = new Set(value.filter((role): role is string => typeof role === 'string'))
  return [...roles].sort()
}

function readOptionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null
}
