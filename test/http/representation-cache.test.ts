import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { representationTag } from '../../src/http/representation.js'
import { createRepresentationCache } from '../../src/http/representation-cache.js'
import type { TaggedBody } from '../../src/snapshot/types.js'

/** A body that counts how often its bytes are asked for (joined, in a shell's case). */
function countingBody(tag: string, text: string): TaggedBody & { joins: number } {
  const bytes = Buffer.from(text)
  const body = {
    tag,
    byteLength: bytes.length,
    joins: 0,
    bytes() {
      body.joins += 1
      return bytes
    },
  }
  return body
}

/** 3,000 bytes and more of text: long enough to be compressed. */
const LONG_TEXT = `{"pad":"${'menu item '.repeat(300)}"}`

t.test('each coding of a body is made once, with its own strong tag', async (t) => {
  const cache = createRepresentationCache()
  const body = countingBody('abc', LONG_TEXT)
  const identity = cache.representationOf(body, 'identity')
  t.equal(identity.etag, '"abc"')
  t.equal(identity.coding, 'identity')
  t.equal(identity.body.toString(), LONG_TEXT)
  const br = cache.representationOf(body, 'br')
  t.equal(br.etag, '"abc.br"')
  t.equal(brotliDecompressSync(br.body).toString(), LONG_TEXT)
  t.ok(br.body.length < body.byteLength / 5, 'compressed')
  const gzip = cache.representationOf(body, 'gzip')
  t.equal(gzip.etag, '"abc.gz"')
  t.equal(gunzipSync(gzip.body).toString(), LONG_TEXT)
  t.equal(body.joins, 3, 'joined once per coding')
  t.equal(cache.representationOf(body, 'br'), br, 'kept: a repeat compresses nothing')
  t.equal(cache.representationOf(countingBody('abc', LONG_TEXT), 'br'), br, 'found by its tag')
  t.equal(body.joins, 3)
})

t.test('the tag rule is the one the representations carry', async (t) => {
  const cache = createRepresentationCache()
  const long = countingBody('long', LONG_TEXT)
  const short = countingBody('short', '{"apps":[]}')
  for (const coding of ['identity', 'br', 'gzip'] as const) {
    t.equal(cache.representationOf(long, coding).etag, `"${representationTag(long, coding)}"`)
    const small = cache.representationOf(short, coding)
    t.equal(small.etag, '"short"', `${coding}: a body under 1,024 bytes is sent as it is`)
    t.equal(small.coding, 'identity')
    t.equal(representationTag(short, coding), 'short')
  }
})

t.test('representations are bounded by the bytes they hold', async (t) => {
  const first = countingBody('first', LONG_TEXT)
  const second = countingBody('second', LONG_TEXT)
  const third = countingBody('third', LONG_TEXT)
  // Room for two identity bodies (each is charged 256 bytes besides), not three.
  const cache = createRepresentationCache(2 * (first.byteLength + 256))
  const a = cache.representationOf(first, 'identity')
  const b = cache.representationOf(second, 'identity')
  t.equal(cache.representationOf(first, 'identity'), a, 'both fit')
  cache.representationOf(third, 'identity')
  t.equal(cache.representationOf(first, 'identity'), a, 'the most recently used stays')
  t.not(cache.representationOf(second, 'identity'), b, 'the least recently used made room')
})
