import { type Coding, negotiateCoding } from './accept-encoding.js'
import { parseAcceptLanguage } from './accept-language.js'
import { memoizeHeader } from './header-memo.js'

/** What a request's `Accept-Encoding` and `Accept-Language` ask for. */
export interface Negotiation {
  /** The coding to send the body in; no header: identity. */
  coding(acceptEncoding: string | undefined): Coding
  /**
   * The language ranges to try, in preference order; no header, or one that
   * does not parse (treated as absent, never as an error): none.
   */
  languages(acceptLanguage: string | undefined): readonly string[]
}

const NO_RANGES: readonly string[] = Object.freeze([])

/**
 * One instance's negotiation: browsers send a handful of distinct values of
 * these headers, so each value is worked out once (http/header-memo.ts)
 * rather than parsed on every request.
 */
export function createNegotiation(): Negotiation {
  const codingOf = memoizeHeader(negotiateCoding)
  const languagesOf = memoizeHeader((header) => parseAcceptLanguage(header) ?? NO_RANGES)
  return {
    coding: (header) => (header === undefined ? 'identity' : codingOf(header)),
    languages: (header) => (header === undefined ? NO_RANGES : languagesOf(header)),
  }
}
