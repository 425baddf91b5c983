import { type Coding, negotiateCoding } from './accept-encoding.js'
import { parseAcceptLanguage } from './accept-language.js'
import { memoizeHeader } from './header-memo.js'

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
