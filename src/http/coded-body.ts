import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import type { Coding } from './accept-encoding.js'

/** A body this small is sent as it is: compressing it saves less than its headers cost. */
export const MIN_CODED_BYTES = 1_024

/**
 * How hard to compress, by measurement on this project's bodies (2-core VM,
 * Node 20; bench/README.md, "Compression"):
 *
 * | body | coding | size of identity | time |
 * |---|---|---|---|
 * | a shell, 2.2 KB | brotli 1 | 0.363 | 14 µs |
 * | | brotli 2 | 0.357 | 17 to 19 µs |
 * | | brotli 4 | 0.327 | 36 to 40 µs |
 * | | brotli 11 | 0.266 | 2.6 ms |
 * | | gzip 6 | 0.336 | 19 to 20 µs |
 * | the inventory, 162 KB | brotli 5 | 0.023 | 0.8 ms |
 * | | brotli 11 | 0.031 | 133 ms |
 * | | gzip 6 | 0.071 | 0.5 ms |
 *
 * (times from a loop; in the service under load, with cold caches, a
 * shell's first brotli costs 50 to 70 µs of CPU). A shell body holds its
 * caller's user block, so it is compressed on the first request for it (a
 * later token of the same user finds it made: routes/last-shell-memo.ts),
 * where every microsecond shows on that answer: brotli 2, at half brotli
 * 4's time for 0.02 more of the body. The inventory is compressed once per
 * change of what it lists, with the snapshot: brotli 5, past which it does
 * not shrink. gzip's default level 6 for both: the levels above it buy
 * nothing here.
 */
const EFFORT = {
  request: { brotliQuality: 2, gzipLevel: 6 },
  snapshot: { brotliQuality: 5, gzipLevel: 6 },
} as const

/** Where a body is compressed: on a request (as cheap as it gets) or with the snapshot. */
export type Effort = keyof typeof EFFORT

/** One representation of a body: its bytes, how they are coded, and its strong ETag (quotes included). */
export interface Representation {
  readonly body: Buffer
  readonly coding: Coding
  readonly etag: string
}

/** A body and its codings, each made on first use and kept with it. */
export interface CodedBody {
  readonly identity: Representation
  /** The body in `coding`; as it is when that is identity or the body is small. */
  in(coding: Coding): Representation
  /** The bytes held: the body and the codings made so far. */
  readonly bytes: number
}

/**
 * `tag` (content-derived, without quotes) names the identity body. Each
 * coding's tag is that tag with the coding's suffix: strong, distinct from
 * the identity tag, and the same on every instance (RFC 9110 section 8.8.3).
 */
export function createCodedBody(
  body: Buffer,
  tag: string,
  effort: Effort,
  /** Called after a coding is made: `bytes` has grown. */
  onCoded?: (coded: CodedBody) => void,
): CodedBody {
  const identity: Representation = Object.freeze({ body, coding: 'identity', etag: `"${tag}"` })
  const made = new Map<Coding, Representation>()
  let bytes = body.length
  const codedBody: CodedBody = Object.freeze({
    identity,
    in(coding: Coding): Representation {
      if (coding === 'identity' || body.length < MIN_CODED_BYTES) return identity
      let representation = made.get(coding)
      if (representation === undefined) {
        const coded = encode(body, coding, effort)
        representation = Object.freeze({ body: coded, coding, etag: `"${codedTag(tag, coding)}"` })
        made.set(coding, representation)
        bytes += coded.length
        onCoded?.(codedBody)
      }
      return representation
    },
    get bytes() {
      return bytes
    },
  })
  return codedBody
}

/**
 * The tag (without quotes) of a body of `length` bytes whose identity tag is
 * `tag`, sent in `coding`: what createCodedBody's representations carry,
 * for those that know the tag and the length but hold no body (event streams).
 */
export function representationTag(tag: string, coding: Coding, length: number): string {
  return coding === 'identity' || length < MIN_CODED_BYTES ? tag : codedTag(tag, coding)
}

function codedTag(tag: string, coding: Exclude<Coding, 'identity'>): string {
  return `${tag}.${coding === 'br' ? 'br' : 'gz'}`
}

/**
 * zlib's sync calls return a slice of their 16 KB output chunk: kept as it
 * is, every shell's coding would hold 16 KB for a few hundred bytes. The
 * copy weighs what it holds (small ones share Node's buffer pool).
 */
function encode(body: Buffer, coding: Exclude<Coding, 'identity'>, effort: Effort): Buffer {
  const { brotliQuality, gzipLevel } = EFFORT[effort]
  const coded =
    coding === 'gzip'
      ? gzipSync(body, { level: gzipLevel })
      : brotliCompressSync(body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: brotliQuality,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
          },
        })
  return coded.buffer.byteLength > coded.length ? Buffer.from(coded) : coded
}
