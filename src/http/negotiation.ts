import { type Coding, negotiateCoding } from './accept-encoding.js'
import { parseAcceptLanguage } from './accept-language.js'

/** What a request's `Accept-Encoding` and `Accept-Language` ask for. */
export interface Negotiation {
  /** The coding to send the body in; no header: identity. */
  coding(acceptEncoding: string | undefined): Coding
  /** The language ranges to try, in order; none for no header or one that does not parse. */
  languages(acceptLanguage: string | undefined): readonly string[]
}

const NO_RANGES: readonly string[] = Object.freeze([])

/** Browsers send a handful of distinct values of these headers: each is worked out once. */
export function createNegotiation(): Negotiation {
  const codingOf = memoizeHeader(negotiateCoding)
  const languagesOf = memoizeHeader((header) => parseAcceptLanguage(header) ?? NO_RANGES)
  return {
    coding: (header) => (header === undefined ? 'identity' : codingOf(header)),
    languages: (header) => (header === undefined ? NO_RANGES : languagesOf(header)),
  }
}

/** Distinct values kept per header: browsers send a handful, so these are far more. */
const MAX_VALUES = 64
/** Values kept at most this long: real headers are far shorter. */
const MAX_VALUE_CHARS = 256

/** What each value of a header gave; a flood of distinct values pushes the oldest out. */
function memoizeHeader<T>(compute: (value: string) => T): (value: string) => T {
  const remembered = new Map<string, T>()
  return (value) => {
    const known = remembered.get(value)
    if (known !== undefined) return known
    const result = compute(value)
    if (value.length <= MAX_VALUE_CHARS) {
      if (remembered.size >= MAX_VALUES) {
        const oldest = remembered.keys().next().value
        if (oldest !== undefined) remembered.delete(oldest)
      }
      remembered.set(value, result)
    }
    return result
  }
}
