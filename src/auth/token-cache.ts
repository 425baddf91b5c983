import { LRUCache } from 'lru-cache'

interface CacheEntry<Caller> {
  /** The whole token: a lookup hits only when it is this very token. */
  readonly token: string
  readonly caller: Caller
  /** The header kid that verified it (undefined: the token named none). */
  readonly kid: string | undefined
}

/**
 * Characters at the end of a token that key the cache: the end of its signature (RS256 has 342
 * characters, ES256 86), so 43 (256 bits) tell tokens apart. A whole-token key (a KiB or more)
 * would hash each request's fresh header string in full; this costs a short hash and one compare.
 */
const KEY_CHARS = 43

/**
 * A hit is the very same token (the entry holds it whole): two tokens that end alike (not
 * expected, never trusted) take turns in the entry, each verified again once the other replaced it.
 */
export function createTokenCache<Caller extends { readonly expiresAtMs: number }>(options: {
  max: number
  now: () => number
}) {
  const { now } = options
  // No TTL in the cache: `get` checks exp on its own clock, sparing a clock reading and an age
  // update per hit; an expired entry goes when next asked for or when the LRU makes room.
  const cache = new LRUCache<string, CacheEntry<Caller>>({ max: options.max })
  return {
    /** The cached caller, or undefined; never one whose token has expired, never another token's. */
    get(token: string): Caller | undefined {
      const key = token.slice(-KEY_CHARS)
      const entry = cache.get(key)
      if (entry === undefined || entry.token !== token) return undefined
      if (entry.caller.expiresAtMs <= now()) {
        cache.delete(key)
        return undefined
      }
      return entry.caller
    },

    remember(token: string, caller: Caller, kid: string | undefined): void {
      // Clock tolerance may accept a token just past its exp; such a token is not worth keeping.
      if (caller.expiresAtMs <= now()) return
      cache.set(token.slice(-KEY_CHARS), { token, caller, kid })
    },

    /** Drops the tokens verified by keys that left the key set; returns how many. */
    dropVerifiedBy(removedKids: ReadonlySet<string>): number {
      if (removedKids.size === 0) return 0
      // Key-set changes are rare, so a scan beats keeping a kid index in step with evictions.
      const doomed: string[] = []
      for (const [key, entry] of cache.entries()) {
        // A token without kid may have matched any key, so any removal is enough to distrust it.
        if (entry.kid === undefined || removedKids.has(entry.kid)) doomed.push(key)
      }
      for (const key of doomed) cache.delete(key)
      return doomed.length
    },
  }
}
