import { LRUCache } from 'lru-cache'
import type { TaggedBody } from '../snapshot/types.js'
import type { Coding } from './accept-encoding.js'
import { encodeRepresentation, type Representation, representationTag } from './representation.js'

export interface RepresentationCache {
  /** The body in `coding`: made (joined, compressed) on first use, then kept by its tag. */
  representationOf(body: TaggedBody, coding: Coding): Representation
}

/** Ten thousand shells of about 3 KB (brotli): as many callers as the token cache holds. */
const MAX_BYTES = 32 * 1024 * 1024
/** Charged per representation besides its bytes: key, tag, objects, bookkeeping. */
const OVERHEAD_BYTES = 256

/**
 * Response bytes by representation tag (LRU): keyed by bytes and coding, a shell is found again
 * by a refreshed token of the same user or after a reload that left its bytes as they were.
 */
export function createRepresentationCache(maxBytes = MAX_BYTES): RepresentationCache {
  const representations = new LRUCache<string, Representation>({
    maxSize: maxBytes,
    sizeCalculation: (representation) => representation.body.length + OVERHEAD_BYTES,
  })
  return {
    representationOf(body, coding) {
      const tag = representationTag(body, coding)
      let representation = representations.get(tag)
      if (representation === undefined) {
        representation = encodeRepresentation(body, coding)
        representations.set(tag, representation)
      }
      return representation
    },
  }
}
