import { generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRandom, GRANT_ROLE_COUNT, grantRole, pickDistinct } from './dataset.js'

/**
 * The identity provider of the benchmark: a Keycloak-shaped realm over
 * node:http (discovery and JWKS, as the service fetches them in production)
 * and an RS256 signer (Keycloak's default realm key) on node:crypto, whose
 * asynchronous `sign` runs on the libuv pool, so minting tens of thousands of
 * tokens uses both cores.
 */
export interface BenchIssuer {
  readonly issuer: string
  readonly audience: string
  /** The public key set, as served; the verify-only route gets the same one. */
  readonly jwks: { keys: Record<string, unknown>[] }
  /** Requests the service made, so the report can show it fetched keys once. */
  readonly requests: { discovery: number; jwks: number }
  mint(user: BenchUser, lifetimeS: number): Promise<string>
  close(): Promise<void>
}

export interface BenchUser {
  readonly sub: string
  readonly username: string
  readonly name: string
  readonly email: string
  readonly roles: readonly string[]
}

const REALM_PATH = '/realms/bench'
const JWKS_PATH = `${REALM_PATH}/protocol/openid-connect/certs`
/** Roles Keycloak puts in every realm token; granted nowhere, so they never change a role-set key. */
const DEFAULT_REALM_ROLES = ['default-roles-bench', 'offline_access', 'uma_authorization']
/** The seed app's roles (seeds/crm.json), held by some users so the crm app has variants too. */
const CRM_ROLES: readonly [string, number][] = [
  ['crm-sales', 0.4],
  ['crm-manager', 0.15],
  ['crm-admin', 0.05],
]

export async function startBenchIssuer(audience: string): Promise<BenchIssuer> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const kid = `bench-${randomUUID().slice(0, 8)}`
  const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }] }
  const requests = { discovery: 0, jwks: 0 }

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    if (path === `${REALM_PATH}/.well-known/openid-configuration`) {
      requests.discovery += 1
      sendJson(response, {
        issuer,
        jwks_uri: `${issuer}/protocol/openid-connect/certs`,
        id_token_signing_alg_values_supported: ['RS256'],
      })
    } else if (path === JWKS_PATH) {
      requests.jwks += 1
      sendJson(response, jwks)
    } else {
      response.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${REALM_PATH}`
  const header = encodeSegment({ alg: 'RS256', typ: 'JWT', kid })

  return {
    issuer,
    audience,
    jwks,
    requests,
    mint: (user, lifetimeS) =>
      signToken(header, accessTokenClaims(user, issuer, audience, lifetimeS), privateKey),
    close() {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** The claims of a Keycloak access token, so token size and parsing cost are realistic (~1 KiB). */
function accessTokenClaims(
  user: BenchUser,
  issuer: string,
  audience: string,
  lifetimeS: number,
): Record<string, unknown> {
  const nowS = Math.floor(Date.now() / 1000)
  return {
    exp: nowS + lifetimeS,
    iat: nowS,
    jti: randomUUID(),
    iss: issuer,
    aud: [audience, 'account'],
    sub: user.sub,
    typ: 'Bearer',
    azp: 'portal',
    sid: randomUUID(),
    acr: '1',
    'allowed-origins': ['https://portal.example.com'],
    realm_access: { roles: user.roles },
    resource_access: { account: { roles: ['manage-account', 'view-profile'] } },
    scope: 'openid profile email',
    email_verified: true,
    name: user.name,
    preferred_username: user.username,
    given_name: user.name.split(' ')[0],
    family_name: user.name.split(' ')[1],
    email: user.email,
  }
}

function signToken(
  header: string,
  claims: Record<string, unknown>,
  privateKey: KeyObject,
): Promise<string> {
  const signingInput = `${header}.${encodeSegment(claims)}`
  return new Promise((resolve, reject) => {
    sign('sha256', Buffer.from(signingInput), privateKey, (error, signature) => {
      if (error) reject(error)
      else resolve(`${signingInput}.${signature.toString('base64url')}`)
    })
  })
}

/** Mints one token per user, `concurrency` signatures in flight at a time. */
export async function mintTokens(
  issuer: BenchIssuer,
  users: readonly BenchUser[],
  lifetimeS: number,
  concurrency = 64,
): Promise<string[]> {
  const tokens: string[] = new Array(users.length)
  let next = 0
  const worker = async () => {
    for (let index = next++; index < users.length; index = next++) {
      const user = users[index]
      if (user !== undefined) tokens[index] = await issuer.mint(user, lifetimeS)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return tokens
}

/**
 * Users with distinct subjects and role sets: one to six of the 20 granted
 * roles (so the generated apps see up to a thousand role-set variants),
 * sometimes crm roles, and Keycloak's default realm roles.
 */
export function generateUsers(count: number, seed = 7): BenchUser[] {
  const random = createRandom(seed)
  const users: BenchUser[] = []
  for (let index = 0; index < count; index += 1) {
    const roleCount = 1 + Math.floor(random() * 6)
    const roles = pickDistinct(random, roleCount, GRANT_ROLE_COUNT).map(grantRole)
    for (const [role, share] of CRM_ROLES) if (random() < share) roles.push(role)
    roles.push(...DEFAULT_REALM_ROLES)
    const number = String(index).padStart(4, '0')
    users.push({
      sub: `5f0c1a2b-0000-4000-8000-${String(index).padStart(12, '0')}`,
      username: `user${number}`,
      name: `User ${number}`,
      email: `user${number}@example.com`,
      roles: roles.sort(),
    })
  }
  return users
}

function encodeSegment(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

function sendJson(response: import('node:http').ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}
