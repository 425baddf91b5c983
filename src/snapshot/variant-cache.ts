import { LRUCache } from 'lru-cache'
import type { ShellVariant } from './types.js'

/**
 * Rendered variants of every app, shared by successive snapshots, bounded as a whole (LRU). Each
 * is filed under its content's prefix too, so gone content is dropped without walking the cache.
 */
export interface VariantCache {
  get(key: string): ShellVariant | undefined
  set(key: string, prefix: string, variant: ShellVariant): void
  dropPrefix(prefix: string): void
}

/** Bytes per variant besides its tail (the head is shared): key, tag, object and bookkeeping. */
const VARIANT_OVERHEAD_BYTES = 256
/** Callers of an app fall into few audiences; this bounds a flood of unusual ones over all apps. */
const MAX_VARIANTS = 10_000
/** 64 MiB: ten thousand variants of a large app's menus fit. */
const MAX_VARIANT_BYTES = 64 * 1024 * 1024

export function createVariantCache(
  limits = { maxEntries: MAX_VARIANTS, maxBytes: MAX_VARIANT_BYTES },
): VariantCache {
  const keysByPrefix = new Map<string, Set<string>>()
  const cache = new LRUCache<string, { variant: ShellVariant; prefix: string }>({
    max: limits.maxEntries,
    maxSize: limits.maxBytes,
    sizeCalculation: (entry) => entry.variant.tail.length + VARIANT_OVERHEAD_BYTES,
    dispose: (entry, key) => {
      const keys = keysByPrefix.get(entry.prefix)
      keys?.delete(key)
      if (keys?.size === 0) keysByPrefix.delete(entry.prefix)
    },
  })
  return {
    get: (key) => cache.get(key)?.variant,
    set(key, prefix, variant) {
      cache.set(key, { variant, prefix })
      const keys = keysByPrefix.get(prefix)
      if (keys === undefined) keysByPrefix.set(prefix, new Set([key]))
      else keys.add(key)
    },
    dropPrefix(prefix) {
      for (const key of [...(keysByPrefix.get(prefix) ?? [])]) cache.delete(key)
    },
  }
}
