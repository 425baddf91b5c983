import { isIP } from 'node:net'

/** The host as a URL writes it: an IPv6 address in brackets. */
export function hostInUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

/** Loopback addresses and names that only resolve to loopback. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1'
  return false
}
