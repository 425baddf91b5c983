import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import type { TaggedBody } from '../snapshot/types.js'
import type { Coding } from './accept-encoding.js'

/** A body's bytes, how they are coded, and its strong ETag (quotes included). */
export interface Representation {
  readonly body: Buffer
  readonly coding: Coding
  readonly etag: string
}

/** A body this small is sent as it is: compressing it saves less than its headers cost. */
const MIN_CODED_BYTES = 1_024
/**
 * Bodies from this size on (the inventory, a script) are made once per change, not per caller:
 * worth a harder effort than a shell, compressed on the request that first asks for it.
 */
const LARGE_BODY_BYTES = 64 * 1024
/**
 * brotli's quality by body size (bench/README.md, "Compression"): 2 for a shell, about half the
 * time of 4 for 2 % more bytes; 5 for a large body, past which the inventory does not shrink.
 * gzip's default level 6 for both: the levels above it buy nothing here.
 */
const BROTLI_QUALITY = { small: 2, large: 5 } as const
const GZIP_LEVEL = 6

/**
 * The tag (no quotes) of `body` in `coding`: its own when sent as it is, else with the coding's
 * suffix, strong and distinct (RFC 9110 section 8.8.3); event streams send it without coding.
 */
export function representationTag(body: Omit<TaggedBody, 'bytes'>, coding: Coding): string {
  if (coding === 'identity' || body.byteLength < MIN_CODED_BYTES) return body.tag
  return `${body.tag}.${coding === 'br' ? 'br' : 'gz'}`
}

export function encodeRepresentation(body: TaggedBody, coding: Coding): Representation {
  const tag = representationTag(body, coding)
  const bytes = body.bytes()
  if (coding === 'identity' || tag === body.tag) {
    return Object.freeze({ body: bytes, coding: 'identity', etag: `"${tag}"` })
  }
  return Object.freeze({ body: compress(bytes, coding), coding, etag: `"${tag}"` })
}

/**
 * zlib's sync calls return a slice of their 16 KB output chunk, which would keep 16 KB per
 * shell: the copy weighs what it holds (small ones share Node's buffer pool).
 */
function compress(body: Buffer, coding: Exclude<Coding, 'identity'>): Buffer {
  const coded =
    coding === 'gzip'
      ? gzipSync(body, { level: GZIP_LEVEL })
      : brotliCompressSync(body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]:
              body.length < LARGE_BODY_BYTES ? BROTLI_QUALITY.small : BROTLI_QUALITY.large,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
          },
        })
  return coded.buffer.byteLength > coded.length ? Buffer.from(coded) : coded
}
