/**
 * Where the service is: where this module was loaded from, when it came from
 * the service, and whether the page is on another origin, which decides how
 * the shell is revalidated.
 */
import type { ShellClientOptions } from './shell-types.js'

/**
 * Not in ShellClientOptions, for the bench that compares the ways to
 * revalidate, never for a page: `'tag'` has the script send the shown
 * shell's tag in If-None-Match on every GET, as it does by default where no
 * preflight is at stake.
 */
interface UnlistedOptions {
  readonly revalidateWith?: 'tag'
}

/** Where the service is when this module came from it: its URL less `/client/v1/...`. */
export function findModuleBaseUrl(): string {
  const url = new URL(import.meta.url)
  const at = url.pathname.lastIndexOf('/client/v1/')
  if (at < 0 || !url.protocol.startsWith('http')) {
    throw new TypeError('baseUrl is needed when bundled')
  }
  return url.origin + url.pathname.slice(0, at)
}

/**
 * Whether the script sends the shown shell's tag in If-None-Match. From
 * another origin a tag set by the script costs a CORS preflight on every GET,
 * which Chromium then never takes from its preflight cache; the browser's
 * HTTP cache revalidates with the tag it holds instead, a new token's GET
 * included, at no such cost (docs/client.md, "Which way to revalidate"). On
 * the page's own origin, and where there is no HTTP cache (Node), the script
 * sends it.
 */
export function sendsTagByScript(shellUrl: string, options: ShellClientOptions): boolean {
  return (options as UnlistedOptions).revalidateWith === 'tag' || !isCrossOrigin(shellUrl)
}

/** A page (or a worker) on another origin than `url`'s; never so where there is no page (Node). */
function isCrossOrigin(url: string): boolean {
  const here = globalThis.location?.origin
  return here !== undefined && here !== new URL(url).origin
}
