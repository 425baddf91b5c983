import type { FastifyReply, FastifyRequest } from 'fastify'
import { isLoopback } from '../config/host-address.js'
import { firstHeaderValue } from './header-values.js'
import { sendProblem } from './problem.js'

/**
 * The header the preview page sends to local-mode helpers: another origin's page needs a CORS
 * preflight to send it, which these paths never approve; a form, link or image cannot at all.
 */
export const LOCAL_PAGE_HEADER = 'x-shell-preview'

/**
 * Why a request may not use a local-mode helper, or undefined. Local mode listens on loopback,
 * but a page in the developer's browser runs here too, so: the peer is this machine; `Host`
 * names it (a name re-pointed at 127.0.0.1, DNS rebinding, is refused); the custom header is
 * there; `Origin` and `Sec-Fetch-Site`, which pages cannot forge, say same-origin when sent.
 */
function findLocalSameOriginViolation(request: FastifyRequest): string | undefined {
  if (!isLoopbackAddress(request.socket.remoteAddress))
    return 'local-mode helpers answer loopback only'
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

/** An onRequest hook: a 403 before the body is read. */
export async function refuseUnlessLocalSameOrigin(
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  const violation = findLocalSameOriginViolation(request)
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
