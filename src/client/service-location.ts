/**
 * Where the service is: where this module was loaded from, when it came from
 * the service, and whether the page is on another origin.
 */

/** Where the service is when this module came from it: its URL less `/client/v1/...`. */
export function findModuleBaseUrl(): string {
  const url = new URL(import.meta.url)
  const at = url.pathname.lastIndexOf('/client/v1/')
  if (at < 0 || !url.protocol.startsWith('http')) {
    throw new TypeError('createShellClient: a bundled module needs baseUrl')
  }
  return url.origin + url.pathname.slice(0, at)
}

/** A page (or a worker) on another origin than `url`'s; never so where there is no page (Node). */
export function isCrossOrigin(url: string): boolean {
  const here = globalThis.location?.origin
  return here !== undefined && here !== new URL(url).origin
}
