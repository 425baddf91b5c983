/** A request header's value; the first, when a client sent the header twice. */
export function firstHeaderValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header
}
