import t from 'tap'
import { negotiateCoding } from '../../src/http/accept-encoding.js'
import { createNegotiation } from '../../src/http/negotiation.js'

/** `Accept-Encoding` values and the coding the service answers in (docs/api.md, "Compression"). */
const TABLE: readonly [header: string | undefined, coding: string][] = [
  [undefined, 'identity'],
  ['', 'identity'],
  ['gzip, deflate, br, zstd', 'br'], // a browser's: all q=1, br first on a tie
  ['gzip, deflate', 'gzip'],
  ['br', 'br'],
  ['BR', 'br'], // codings compare case-insensitively
  ['gzip;q=1, br;q=0.9', 'gzip'], // the highest q wins
  ['br;q=0.5, gzip;q=0.5', 'br'], // on a tie, br, then gzip
  ['gzip;q=0.5, identity;q=0.5', 'gzip'],
  ['identity', 'identity'],
  ['deflate, zstd', 'identity'], // nothing the service sends
  ['*', 'br'], // any coding not named
  ['br;q=0, *', 'gzip'],
  ['br;q=0, gzip;q=0', 'identity'],
  ['*;q=0', 'identity'], // nothing acceptable: as it is
  ['identity;q=0, gzip;q=0.1', 'gzip'],
  ['identity;q=0', 'identity'], // nothing acceptable
  ['gzip;Q=0.001', 'gzip'],
  ['gzip ; q=0.8 , br ; q=0.7', 'gzip'], // spaces around ; and ,
  ['gzip,,br', 'br'], // empty list elements are allowed
  ['gzip;q=1.5', 'identity'], // a weight above 1 does not parse: as absent
  ['gzip;q=0.1234', 'identity'], // four decimals
  ['gzip;level=9', 'identity'], // a parameter Accept-Encoding has no room for
  ['gz ip', 'identity'],
  ['br;q=', 'identity'],
]

t.test('the negotiation table', async (t) => {
  const negotiation = createNegotiation()
  for (const [header, coding] of TABLE) {
    t.equal(negotiation.coding(header), coding, String(header))
    t.equal(negotiation.coding(header), coding, `${header}: the same when remembered`)
  }
})

t.test('junk of several KiB is an unparsable header, and no trouble', async (t) => {
  const junk = `${'x'.repeat(4096)};;;${'é'.repeat(2048)}`
  t.equal(negotiateCoding(junk), 'identity')
  t.equal(negotiateCoding(`${'gzip, '.repeat(1500)}br`), 'br', 'a long valid list is read whole')
  // Thousands of distinct values: each worked out, none kept beyond the bound.
  const negotiation = createNegotiation()
  const wrong: string[] = []
  for (let index = 0; index < 5_000; index += 1) {
    const weight = index % 1000
    const header = `gzip;q=0.${weight}, x${index}`
    if (negotiation.coding(header) !== (weight === 0 ? 'identity' : 'gzip')) wrong.push(header)
  }
  t.same(wrong, [], 'each of 5,000 distinct values negotiated right')
  t.equal(negotiation.coding('gzip, deflate, br, zstd'), 'br', 'still right afterwards')
})
