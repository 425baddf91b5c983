/**
 * `Accept-Language` (RFC 9110 section 12.5.4) as lowercased ranges in the order to try them:
 * descending `q`, equal `q` in header order, `q=0` left out. Not a well-formed list: null.
 */
export function parseAcceptLanguage(header: string): readonly string[] | null {
  const weighted: { range: string; q: number }[] = []
  for (const element of header.split(',')) {
    const text = element.trim()
    // Empty list elements are allowed (RFC 9110 section 5.6.1): "de,,en" or a trailing comma.
    if (text === '') continue
    const match = LANGUAGE_RANGE_WITH_WEIGHT.exec(text)
    if (match === null) return null
    const q = match[2] === undefined ? 1 : Number(match[2])
    if (q > 0) weighted.push({ range: (match[1] as string).toLowerCase(), q })
  }
  // Array.prototype.sort is stable: equal weights keep the header's order.
  return weighted.sort((a, b) => b.q - a.q).map(({ range }) => range)
}

/** `language-range [ OWS ";" OWS "q=" qvalue ]` (RFC 4647 section 2.1, RFC 9110 section 12.4.2). */
const LANGUAGE_RANGE_WITH_WEIGHT =
  /^(\*|[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)(?:[ \t]*;[ \t]*[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?))?$/
