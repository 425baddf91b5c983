/**
 * Bytes of the slab that response bodies are cut from. A shell body of
 * a few KB is past what Node's shared 8 KiB pool hands out (half of it), so
 * `Buffer.concat` would give each response an ArrayBuffer of its own, several
 * times the cost of a cut from a slab. A slab is freed once every body cut
 * from it has been written; a body held up by a client that does not read
 * keeps its whole slab, so the slab stays small: 64 KiB, about a dozen shell
 * bodies (a larger slab was no faster in the bench).
 */
const SLAB_BYTES = 64 * 1024
/** Larger bodies get an allocation of their own rather than most of a slab. */
const MAX_SLAB_BODY_BYTES = SLAB_BYTES / 4
/** Cuts start on 8-byte boundaries, as Node's pool aligns them. */
const ALIGN_MASK = 7

let slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
let slabOffset = 0

/**
 * head + middle + tail in one new Buffer, for a response body. A private slab
 * rather than a larger `Buffer.poolSize`: only short-lived bodies are cut from
 * it, so a long-lived small buffer (a cached user block, a rendered variant)
 * never keeps a large pool alive.
 */
export function joinBodyParts(head: Buffer, middle: Buffer, tail: Buffer): Buffer {
  const size = head.length + middle.length + tail.length
  if (size > MAX_SLAB_BODY_BYTES) return Buffer.concat([head, middle, tail], size)
  if (slabOffset + size > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
    slabOffset = 0
  }
  const body = slab.subarray(slabOffset, slabOffset + size)
  slabOffset = (slabOffset + size + ALIGN_MASK) & ~ALIGN_MASK
  body.set(head, 0)
  body.set(middle, head.length)
  body.set(tail, head.length + middle.length)
  return body
}
