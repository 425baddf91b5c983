import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose'
import { hostInUrl } from '../config/host-address.js'

/** The audience local tokens carry and local mode accepts (docs/api.md, "Trying it locally"). */
export const LOCAL_AUDIENCE = 'shell-data'
/** ES256: small tokens, fast to sign and verify, and asymmetric like a real provider's. */
const ALGORITHM = 'ES256'
const KEY_FILE = 'local-issuer-key.json'
/** The last started local service's issuer: `shell-data token` signs for it, whatever its PORT. */
const ISSUER_RECORD = 'local-issuer.json'
/** Path of the JWKS below the issuer, shaped like Keycloak's so local mode looks like production. */
export const LOCAL_JWKS_PATH = '/protocol/openid-connect/certs'

export interface LocalTokenClaims {
  readonly sub: string
  readonly roles: readonly string[]
  readonly ttlSeconds: number
  readonly username?: string
  readonly name?: string
  readonly email?: string
}

/** `http://127.0.0.1:8080/local-issuer` for the address the service listens on. */
export function localIssuerUrl(host: string, port: number): string {
  return `http://${hostInUrl(host)}:${port}/local-issuer`
}

/** Notes the issuer a starting local service uses, for `shell-data token`. */
export async function recordLocalIssuer(dataDir: string, issuer: string): Promise<void> {
  await mkdir(dataDir, { recursive: true })
  await writeFile(join(dataDir, ISSUER_RECORD), `${JSON.stringify({ issuer })}\n`)
}

/** The issuer the local service last started with from this clone; null before its first start. */
export async function readRecordedLocalIssuer(dataDir: string): Promise<string | null> {
  const record = await readJsonIfPresent(join(dataDir, ISSUER_RECORD))
  const issuer = (record as { issuer?: unknown } | null)?.issuer
  return typeof issuer === 'string' ? issuer : null
}

async function readJsonIfPresent(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

export type LocalIssuer = Awaited<ReturnType<typeof loadLocalIssuer>>

/**
 * The service as its own issuer, for local use only: discovery, JWKS and tokens signed with the key
 * pair in `dataDir`, created there (mode 0600) on first use.
 */
export async function loadLocalIssuer(options: { dataDir: string; issuer: string }) {
  const privateJwk = await readOrCreateKey(options.dataDir)
  const privateKey = await importJWK(privateJwk, ALGORITHM)
  const { d: _private, ...publicJwk } = privateJwk
  const { issuer } = options
  return {
    issuer,
    discoveryDocument: () => ({
      issuer,
      jwks_uri: `${issuer}${LOCAL_JWKS_PATH}`,
      id_token_signing_alg_values_supported: [ALGORITHM],
      response_types_supported: ['token'],
      subject_types_supported: ['public'],
    }),
    jwks: () => ({ keys: [{ ...publicJwk, use: 'sig' }] }),
    signToken: (claims: LocalTokenClaims) =>
      new SignJWT({
        typ: 'Bearer',
        azp: 'shell-data-local',
        preferred_username: claims.username ?? claims.sub,
        name: claims.name,
        email: claims.email,
        realm_access: { roles: [...claims.roles] },
      })
        .setProtectedHeader({ alg: ALGORITHM, kid: privateJwk.kid ?? 'local', typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(LOCAL_AUDIENCE)
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime(`${claims.ttlSeconds}s`)
        .sign(privateKey),
  }
}

async function readOrCreateKey(dataDir: string): Promise<JWK> {
  const file = join(dataDir, KEY_FILE)
  const existing = await readJsonIfPresent(file)
  if (existing !== null) return existing as JWK
  await mkdir(dataDir, { recursive: true })
  const { privateKey } = await generateKeyPair(ALGORITHM, { extractable: true })
  const jwk: JWK = {
    ...(await exportJWK(privateKey)),
    alg: ALGORITHM,
    kid: `local-${randomBytes(6).toString('hex')}`,
  }
  try {
    await writeFile(file, `${JSON.stringify(jwk)}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    // Another process (the CLI beside the service) created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readOrCreateKey(dataDir)
    throw error
  }
  await chmod(file, 0o600)
  return jwk
}

/** `1h`, `30m`, `90s`, `2d` or plain seconds. */
export function parseTtl(text: string): number | null {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim())
  if (match === null) return null
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd']
  const seconds = Number(match[1]) * unit
  return seconds > 0 ? seconds : null
}
