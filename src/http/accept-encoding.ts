/** The content codings the service sends; `identity` is the body as it is. */
export type Coding = 'br' | 'gzip' | 'identity'

/** Below the least weight a header can give (0.001): acceptable, and last. */
const UNNAMED_IDENTITY_WEIGHT = 0.0001

/** `coding [ OWS ";" OWS "q=" qvalue ]` (RFC 9110 sections 12.5.3, 12.4.2). */
const CODING_WITH_WEIGHT =
  /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:[ \t]*;[ \t]*[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?))?$/

export const CODINGS: readonly Coding[] = ['br', 'gzip', 'identity']

/**
 * The coding with the highest `q` for an `Accept-Encoding` header; a header that does not
 * parse, or nothing acceptable: identity.
 */
export function negotiateCoding(header: string): Coding {
  const weights = new Map<string, number>()
  for (const element of header.split(',')) {
    const text = element.trim()
    // Empty list elements are allowed (RFC 9110 section 5.6.1).
    if (text === '') continue
    const match = CODING_WITH_WEIGHT.exec(text)
    if (match === null) return 'identity'
    weights.set((match[1] as string).toLowerCase(), match[2] === undefined ? 1 : Number(match[2]))
  }
  const any = weights.get('*')
  // `*` weighs what the header does not name, identity included. Identity neither named nor
  // covered by `*` is still acceptable (RFC 9110 section 12.5.3), after whatever is named.
  const weightOf = (coding: Coding) =>
    weights.get(coding) ?? any ?? (coding === 'identity' ? UNNAMED_IDENTITY_WEIGHT : 0)
  let best: Coding = 'identity'
  let bestWeight = 0
  // On equal `q`, in CODINGS' order: the smallest bytes first.
  for (const coding of CODINGS) {
    const weight = weightOf(coding)
    if (weight > bestWeight) {
      best = coding
      bestWeight = weight
    }
  }
  return best
}
