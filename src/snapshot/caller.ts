import type { VerifiedClaims } from '../auth/verified-claims.js'
import { contentTag } from './content-tag.js'

/** Who asks, made once per verified token: a request splices its bytes instead of serializing. */
export interface Caller {
  readonly sub: string
  /** De-duplicated and sorted: the role-set key is built from them. */
  readonly roles: readonly string[]
  /** The token's `exp`: an event stream ends then. */
  readonly expiresAtMs: number
  /** UTF-8 JSON of the response's `user` object. */
  readonly userBlock: Buffer
  readonly userTag: string
  /** Rollout buckets by `<appKey>/<itemKey>`, each hashed once per token, when first needed. */
  readonly rolloutBuckets: Map<string, number>
}

export function buildCaller(claims: VerifiedClaims): Caller {
  // Key order is fixed (docs/api.md, "Requests and answers"): the bytes, and so the ETag, must not vary.
  const userJson = JSON.stringify({
    sub: claims.sub,
    username: claims.username,
    name: claims.name,
    email: claims.email,
    roles: claims.roles,
  })
  return Object.freeze({
    sub: claims.sub,
    roles: claims.roles,
    expiresAtMs: claims.expiresAtMs,
    userBlock: Buffer.from(userJson, 'utf8'),
    userTag: contentTag(userJson),
    rolloutBuckets: new Map(),
  })
}
