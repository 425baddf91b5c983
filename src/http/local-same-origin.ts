import type { FastifyReply, FastifyRequest } from 'fastify'
import { isLoopback } from '../config/host-address.js'
import { firstHeaderValue } from './header-values.js'
import { sendProblem } from './problem.js'

/**
 * The header the preview page sends on every call to a local-mode helper. A
 * page of another origin cannot send a custom header without a CORS preflight,
 * which these paths never approve, and a form, a link or an image cannot send
 * one at all.
 */
export const LOCAL_PAGE_HEADER = 'x-shell-preview'

export interface LocalRequestFacts {
  readonly remoteAddress: string | undefined
  readonly headers: FastifyRequest['headers']
}

/**
 * Why a request may not use a local-mode helper of the preview page, or
 * undefined when it may. Local mode listens on loopback only, but a page open
 * in the developer's browser runs on this machine too, so the checks aim at
 * that page: the connection comes from this machine; `Host` names this
 * machine, so a page whose own name was re-pointed at 127.0.0.1 (DNS
 * rebinding) is refused although the browser deems it same-origin; the
 * custom header is there; and `Origin` and `Sec-Fetch-Site`, which browsers
 * set and pages cannot forge, say same-origin whenever they are sent (a
 * script such as curl sends neither).
 */
export function findLocalSameOriginViolation(request: LocalRequestFacts): string | undefined {
  if (!isLoopbackAddress(request.remoteAddress)) return 'local-mode helpers answer loopback only'
  const host = firstHeaderValue(request.headers.host)
  const hostname = host === undefined ? undefined : readHostname(host)
  if (hostname === undefined || !isLoopback(hostname))
    return 'the Host header must name this machine (localhost or a loopback address)'
  if (firstHeaderValue(request.headers[LOCAL_PAGE_HEADER]) === undefined)
    return `the ${LOCAL_PAGE_HEADER} header is required`
  const origin = firstHeaderValue(request.headers.origin)
  if (origin !== undefined && origin !== `http://${host}`)
    return 'only the preview page of this service may ask'
  const site = firstHeaderValue(request.headers['sec-fetch-site'])
  if (site !== undefined && site !== 'same-origin')
    return 'only the preview page of this service may ask'
  return undefined
}

/** An onRequest hook: answers 403 before the body is read when the request may not go on. */
export async function refuseUnlessLocalSameOrigin(
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  const violation = findLocalSameOriginViolation({
    remoteAddress: request.socket.remoteAddress,
    headers: request.headers,
  })
  return violation === undefined ? undefined : sendProblem(reply, 'localOnly', violation)
}

/** A peer address: IPv4 loopback also as an IPv4-mapped IPv6 address (a dual-stack socket). */
function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return isLoopback(mapped?.[1] ?? address)
}

/** `127.0.0.1:8080` → `127.0.0.1`, `[::1]:8080` → `[::1]`; undefined when it names no host. */
function readHostname(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname
  } catch {
    return undefined
  }
}
