import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from 'jose'

/**
 * A real OpenID provider stand-in over node:http: discovery, a JWKS, key
 * rotation and outages, and a signer for tokens. Tests talk to it over HTTP
 * exactly as the service talks to Keycloak.
 */

export type KeyAlgorithm = 'RS256' | 'ES256' | 'PS256' | 'EdDSA'
export type Availability = 'up' | 'status-503' | 'reset'

export interface SignOptions {
  /** Key to sign with; default: the newest published key. */
  kid?: string
  /** Header kid to claim instead of the signing key's (null: no kid header). */
  headerKid?: string | null
  /** Header typ; default `JWT`, null to omit. */
  typ?: string | null
  /** Extra protected header parameters. */
  header?: Record<string, unknown>
  /** Lifetime from the server clock; default 300 s. */
  expiresInS?: number
  /** Forged tokens: `none` (no signature) or `HS256` with a made-up secret. */
  forge?: 'none' | 'HS256'
}

export interface JwksServer {
  readonly origin: string
  readonly issuer: string
  readonly jwksUrl: string
  /** Request counts by kind; `paths` lists every path requested, in order. */
  readonly requests: { discovery: number; jwks: number; paths: string[] }
  /** Every token signed so far, so tests can prove none of them reached a log. */
  readonly minted: string[]
  /** Adds a key (published unless told otherwise) and returns its kid. */
  addKey(options?: { alg?: KeyAlgorithm; kid?: string; publish?: boolean }): Promise<string>
  publishedKids(): string[]
  /** Takes a key out of the JWKS; it can still sign, like a leaked or retired key. */
  unpublishKey(kid: string): void
  setAvailability(mode: Availability): void
  /** Advertise another jwks_uri in the discovery document (null: the real one). */
  setAdvertisedJwksUri(uri: string | null): void
  sign(claims?: JWTPayload, options?: SignOptions): Promise<string>
  close(): Promise<void>
}

interface SigningKey {
  readonly kid: string
  readonly alg: KeyAlgorithm
  readonly privateKey: CryptoKey
  readonly publicJwk: JWK
  published: boolean
}

const DISCOVERY_SUFFIX = '/.well-known/openid-configuration'

export async function startJwksServer(
  t: { teardown(fn: () => unknown): void },
  options: {
    /** Issuer to advertise and sign with; default: this server's origin plus `/realms/test`. */
    issuer?: string
    /** Path of the key set on this server. */
    jwksPath?: string
    audience?: string
    /** Clock in ms; tests that move time pass the verifier's clock. */
    now?: () => number
    /** Algorithms of the keys published at start; default one RS256 key. */
    initialKeys?: KeyAlgorithm[]
  } = {},
): Promise<JwksServer> {
  const now = options.now ?? Date.now
  const jwksPath = options.jwksPath ?? '/realms/test/protocol/openid-connect/certs'
  const keys: SigningKey[] = []
  const requests = { discovery: 0, jwks: 0, paths: [] as string[] }
  const minted: string[] = []
  let availability: Availability = 'up'
  let advertisedJwksUri: string | null = null
  let keyCounter = 0

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    requests.paths.push(path)
    if (availability === 'reset') {
      request.socket.destroy()
      return
    }
    if (availability === 'status-503') {
      response.writeHead(503, { 'content-type': 'text/plain' }).end('down')
      return
    }
    if (path.endsWith(DISCOVERY_SUFFIX)) {
      requests.discovery += 1
      sendJson(response, {
        issuer,
        jwks_uri: advertisedJwksUri ?? `${origin}${jwksPath}`,
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      })
      return
    }
    if (path === jwksPath) {
      requests.jwks += 1
      sendJson(response, { keys: keys.filter((key) => key.published).map((key) => key.publicJwk) })
      return
    }
    response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const issuer = options.issuer ?? `${origin}/realms/test`
  const audience = options.audience ?? 'shell-data'

  async function close(): Promise<void> {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.teardown(close)

  async function addKey(keyOptions: { alg?: KeyAlgorithm; kid?: string; publish?: boolean } = {}) {
    const alg = keyOptions.alg ?? 'RS256'
    keyCounter += 1
    const kid = keyOptions.kid ?? `key-${keyCounter}-${alg.toLowerCase()}`
    const pair = await generateKeyPair(alg, { extractable: true })
    const publicJwk = { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' }
    keys.push({
      kid,
      alg,
      privateKey: pair.privateKey,
      publicJwk,
      published: keyOptions.publish ?? true,
    })
    return kid
  }

  for (const alg of options.initialKeys ?? ['RS256']) await addKey({ alg })

  async function sign(claims: JWTPayload = {}, signOptions: SignOptions = {}): Promise<string> {
    const nowS = Math.floor(now() / 1000)
    const payload: JWTPayload = {
      iss: issuer,
      aud: audience,
      sub: 'user-1',
      typ: 'Bearer',
      iat: nowS,
      exp: nowS + (signOptions.expiresInS ?? 300),
      ...claims,
    }
    const key = findSigningKey(signOptions.kid)
    const headerKid = signOptions.headerKid === undefined ? key.kid : signOptions.headerKid
    const typ = signOptions.typ === undefined ? 'JWT' : signOptions.typ
    const header = {
      ...(headerKid !== null && { kid: headerKid }),
      ...(typ !== null && { typ }),
      ...signOptions.header,
    }
    const token = await signWith(payload, header, key, signOptions.forge)
    minted.push(token)
    return token
  }

  function findSigningKey(kid: string | undefined): SigningKey {
    const key =
      kid === undefined
        ? keys.filter((candidate) => candidate.published).at(-1)
        : keys.find((k) => k.kid === kid)
    if (key === undefined) throw new Error(`no signing key ${kid ?? '(published)'}`)
    return key
  }

  return {
    origin,
    issuer,
    jwksUrl: `${origin}${jwksPath}`,
    requests,
    minted,
    addKey,
    publishedKids: () => keys.filter((key) => key.published).map((key) => key.kid),
    unpublishKey(kid) {
      for (const key of keys) if (key.kid === kid) key.published = false
    },
    setAvailability(mode) {
      availability = mode
    },
    setAdvertisedJwksUri(uri) {
      advertisedJwksUri = uri
    },
    sign,
    close,
  }
}

async function signWith(
  payload: JWTPayload,
  header: Record<string, unknown>,
  key: SigningKey,
  forge: SignOptions['forge'],
): Promise<string> {
  if (forge === 'none') {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    return `${encode({ ...header, alg: 'none' })}.${encode(payload)}.`
  }
  if (forge === 'HS256') {
    const secret = new TextEncoder().encode('a-shared-secret-that-nobody-should-accept')
    return new SignJWT(payload).setProtectedHeader({ ...header, alg: 'HS256' }).sign(secret)
  }
  return new SignJWT(payload).setProtectedHeader({ ...header, alg: key.alg }).sign(key.privateKey)
}

function sendJson(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}
