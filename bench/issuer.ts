import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { createRandom, GRANT_ROLE_COUNT, grantRole, pickDistinct } from './dataset.js'

export interface BenchUser {
  readonly index: number
  readonly roles: readonly string[]
}

const REALM_PATH = '/realms/bench'
/** Roles Keycloak puts in every realm token; granted nowhere, so they never change a role-set key. */
const DEFAULT_REALM_ROLES = ['default-roles-bench', 'offline_access', 'uma_authorization']
/** The seed app's roles (seeds/crm.json): user N holds the subset N mod 8 of them. */
const CRM_ROLES = ['crm-sales', 'crm-manager', 'crm-admin'] as const

/**
 * A Keycloak-shaped realm over node:http: discovery and JWKS as the service
 * fetches them in production, and an RS256 key (Keycloak's default).
 */
export async function startBenchIssuer(audience: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256')
  const kid = `bench-${randomUUID().slice(0, 8)}`
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] }
  const server = createServer((request, response) => {
    const documents: Record<string, unknown> = {
      [`${REALM_PATH}/.well-known/openid-configuration`]: {
        issuer,
        jwks_uri: `${issuer}/protocol/openid-connect/certs`,
        id_token_signing_alg_values_supported: ['RS256'],
      },
      [`${REALM_PATH}/protocol/openid-connect/certs`]: jwks,
    }
    const document = documents[request.url ?? '']
    if (document === undefined) response.writeHead(404).end()
    else
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${REALM_PATH}`
  const mint = (user: BenchUser, lifetimeS: number) =>
    new SignJWT(accessTokenClaims(user, issuer, audience))
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
      .setIssuedAt()
      .setExpirationTime(`${lifetimeS}s`)
      .sign(privateKey)

  return {
    issuer,
    /** The public key set as served; the bare verify route gets the same one. */
    jwks,
    /** One token per user, 64 signatures in flight (WebCrypto signs on the libuv pool: both cores). */
    async mintTokens(users: readonly BenchUser[], lifetimeS: number) {
      const tokens: string[] = new Array(users.length)
      let next = 0
      const worker = async () => {
        for (let index = next++; index < users.length; index = next++) {
          tokens[index] = await mint(users[index] as BenchUser, lifetimeS)
        }
      }
      await Promise.all(Array.from({ length: 64 }, worker))
      return tokens
    },
    close() {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A Keycloak access token's claims, so token size (~1.1 KiB) and parsing cost are realistic. */
function accessTokenClaims(user: BenchUser, issuer: string, audience: string) {
  const number = String(user.index).padStart(4, '0')
  return {
    jti: randomUUID(),
    iss: issuer,
    aud: [audience, 'account'],
    sub: `5f0c1a2b-0000-4000-8000-${String(user.index).padStart(12, '0')}`,
    typ: 'Bearer',
    azp: 'portal',
    sid: randomUUID(),
    acr: '1',
    'allowed-origins': ['https://portal.example.com'],
    realm_access: { roles: user.roles },
    resource_access: { account: { roles: ['manage-account', 'view-profile'] } },
    scope: 'openid profile email',
    email_verified: true,
    name: `User ${number}`,
    preferred_username: `user${number}`,
    given_name: 'User',
    family_name: number,
    email: `user${number}@example.com`,
  }
}

/**
 * Users with distinct role sets: one to six of the 20 granted roles (so a
 * generated app has up to a thousand role-set variants), the crm roles in
 * turn (every subset of them, one user in eight each), and Keycloak's
 * default realm roles.
 */
export function generateUsers(count: number, seed = 7): BenchUser[] {
  const random = createRandom(seed)
  return Array.from({ length: count }, (_, index) => {
    const roles = pickDistinct(random, 1 + Math.floor(random() * 6), GRANT_ROLE_COUNT).map(
      grantRole,
    )
    for (const [bit, role] of CRM_ROLES.entries()) if (index & (1 << bit)) roles.push(role)
    return { index, roles: [...roles, ...DEFAULT_REALM_ROLES].sort() }
  })
}
