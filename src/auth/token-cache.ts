import { LRUCache } from 'lru-cache'
import type { VerifiedCaller } from './verified-caller.js'

interface CacheEntry {
  readonly caller: VerifiedCaller
  /** The header kid that verified it (undefined: the token named none). */
  readonly kid: string | undefined
}

export interface TokenCache {
  /** The cached caller, or undefined; never one whose token has expired. */
  get(token: string): VerifiedCaller | undefined
  remember(token: string, caller: VerifiedCaller, kid: string | undefined): void
  /** Drops the tokens verified by keys that left the key set; returns how many. */
  dropVerifiedBy(removedKids: ReadonlySet<string>): number
}

/** Keyed by the raw token: the cheapest lookup, and a different token is a different credential. */
export function createTokenCache(options: { max: number; now: () => number }): TokenCache {
  const { now } = options
  // perf: the cache's TTL clock is ours, so an injected clock governs both checks.
  const cache = new LRUCache<string, CacheEntry>({ max: options.max, perf: { now } })
  return {
    get(token) {
      const entry = cache.get(token)
      if (entry === undefined) return undefined
      // The TTL already covers this; the check makes "never after exp" independent of cache internals.
      if (entry.caller.expiresAtMs <= now()) {
        cache.delete(token)
        return undefined
      }
      return entry.caller
    },

    remember(token, caller, kid) {
      // Clock tolerance may accept a token just past its exp; such a token is not worth keeping.
      const ttl = caller.expiresAtMs - now()
      if (ttl <= 0) return
      cache.set(token, { caller, kid }, { ttl })
    },

    dropVerifiedBy(removedKids) {
      if (removedKids.size === 0) return 0
      // Key-set changes are rare, so a scan beats keeping a kid index in step with evictions.
      const doomed: string[] = []
      for (const [token, entry] of cache.entries()) {
        // A token without kid may have matched any key, so any removal is enough to distrust it.
        if (entry.kid === undefined || removedKids.has(entry.kid)) doomed.push(token)
      }
      for (const token of doomed) cache.delete(token)
      return doomed.length
    },
  }
}
