/** RFC 4647 lookup (section 3.4) over one app's locales, on lowercased tags. */

/** The range and each shorter form of it, longest first: `de-ch-1996`, `de-ch`, `de`. */
export function truncationsOf(range: string): string[] {
  const forms: string[] = []
  let form = range
  while (form !== '') {
    forms.push(form)
    form = shortenRange(form)
  }
  return forms
}

/** The range less its last subtag, and less a singleton (`x`, `u`) left dangling at its end. */
function shortenRange(range: string): string {
  let end = range.lastIndexOf('-')
  if (end === -1) return ''
  if (end >= 2 && range[end - 2] === '-') end -= 2
  return range.slice(0, end)
}

/** The app's locale, as stored, the first range names by lookup; else the default. */
export function lookUpLocale(
  ranges: readonly string[],
  locales: ReadonlyMap<string, string>,
  defaultLocale: string,
): string {
  for (const range of ranges) {
    if (range === '*') return defaultLocale
    for (const form of truncationsOf(range)) {
      const locale = locales.get(form)
      if (locale !== undefined) return locale
    }
  }
  return defaultLocale
}
