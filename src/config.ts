import { isIP } from 'node:net'

/** A bad setting: stops the start with one line that names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: ConfigVariable,
    reason: string,
  ) {
    super(`${variable}: ${reason}`)
    this.name = 'ConfigError'
  }
}

/**
 * Every environment variable the service reads: the one list that the README,
 * the operator guide, the test harness (which scrubs them from a child's
 * environment) and the benchmark derive from or are checked against. The
 * readers below take only these names.
 */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'FEED_DATABASE_URL',
  'MIGRATE',
  'OIDC_ISSUER',
  'OIDC_AUDIENCE',
  'OIDC_DISCOVERY_URL',
  'OIDC_JWKS_URL',
  'OIDC_ROLES_CLAIM',
  'OIDC_CLOCK_TOLERANCE_S',
  'OIDC_JWKS_COOLDOWN_S',
  'OIDC_JWKS_MAX_AGE_S',
  'AUTH_FAILURE_LOG',
  'TOKEN_CACHE_MAX',
  'LOG_LEVEL',
  'LOG_REQUESTS',
  'CORS_ORIGINS',
  'EVENT_STREAMS_MAX',
] as const
export type ConfigVariable = (typeof CONFIG_VARIABLES)[number]

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
const LOG_LEVELS: readonly LogLevel[] = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
]

/** A dot path into a token payload, split into its steps: `realm_access.roles` → `realm_access`, `roles`. */
export type ClaimPath = readonly string[]

/** Keycloak's realm roles, where its default *roles* client scope puts them. */
export const DEFAULT_ROLES_CLAIM = 'realm_access.roles'

export interface OidcConfig {
  /** Canonical public issuer; a token's `iss` must equal it exactly. */
  readonly issuer: string
  /** Accepted `aud` values (any one of them is enough). */
  readonly audiences: readonly string[]
  /** Base URL whose `/.well-known/openid-configuration` is fetched; often an in-cluster address. */
  readonly discoveryUrl: string
  /** Explicit JWKS address; when set, discovery is skipped. */
  readonly jwksUrl: string | null
  /**
   * Where the caller's roles are in the token payload: dot paths split into
   * their steps once at start. The roles are the union of the arrays found.
   */
  readonly rolesPaths: readonly ClaimPath[]
  /** Seconds of leeway for `exp`, `nbf` and `iat`, for clocks that drift between hosts. */
  readonly clockToleranceS: number
  /** Least seconds between two JWKS fetches caused by an unknown `kid`, so forged kids cannot hammer the provider. */
  readonly jwksCooldownS: number
  /** Seconds after which keys are re-fetched even when every `kid` is known, to notice removed keys. */
  readonly jwksMaxAgeS: number
}

export interface Config {
  /** TCP port to listen on. */
  readonly port: number
  /** Listen address; local mode only allows loopback addresses. */
  readonly host: string
  /** PostgreSQL connection string; null means start an embedded PostgreSQL under `.data/`. */
  readonly databaseUrl: string | null
  /** Session-mode connection for LISTEN (LISTEN does not work through a transaction pooler). */
  readonly feedDatabaseUrl: string | null
  /** `auto` applies migrations at start under an advisory lock; `off` leaves the schema alone. */
  readonly migrate: 'auto' | 'off'
  /** Null in local mode, where the service is its own issuer. */
  readonly oidc: OidcConfig | null
  /** Log one warn line per failed token verification (rate-limited). */
  readonly authFailureLog: boolean
  /** Verified tokens kept in memory, so repeat callers skip signature checks. */
  readonly tokenCacheMax: number
  readonly logLevel: LogLevel
  /** One log line per request; off by default because it halves throughput. */
  readonly logRequests: boolean
  /**
   * Origins whose pages may call the API from a browser, as browsers write
   * them in `Origin` (lowercase scheme and host, no default port); empty: no
   * CORS at all.
   */
  readonly corsOrigins: readonly string[]
  /** Open event streams per instance; past it a new one gets 503 (each holds a socket and a file descriptor). */
  readonly eventStreamsMax: number
}

export type Env = Readonly<Record<string, string | undefined>>

/** Reads and checks every setting once; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const issuer = readUrl(env, 'OIDC_ISSUER')
  const host = readString(env, 'HOST') ?? '127.0.0.1'
  const oidc = issuer === null ? null : readOidc(env, issuer)
  if (oidc === null && !isLoopback(host)) {
    throw new ConfigError(
      'HOST',
      `local mode (OIDC_ISSUER unset) only listens on a loopback address, got "${host}"; set OIDC_ISSUER for a real identity provider`,
    )
  }
  const databaseUrl = readPostgresUrl(env, 'DATABASE_URL')
  const feedDatabaseUrl = readPostgresUrl(env, 'FEED_DATABASE_URL') ?? databaseUrl
  if (feedDatabaseUrl !== null && databaseUrl === null) {
    throw new ConfigError('FEED_DATABASE_URL', 'is set but DATABASE_URL is not')
  }
  return Object.freeze({
    port: readInt(env, 'PORT', 8080, 0, 65535),
    host,
    databaseUrl,
    feedDatabaseUrl,
    migrate: readChoice(env, 'MIGRATE', ['auto', 'off'] as const, 'auto'),
    oidc,
    authFailureLog: readBoolean(env, 'AUTH_FAILURE_LOG', true),
    tokenCacheMax: readInt(env, 'TOKEN_CACHE_MAX', 10_000, 1, 10_000_000),
    logLevel: readChoice(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logRequests: readBoolean(env, 'LOG_REQUESTS', false),
    corsOrigins: readOrigins(env, 'CORS_ORIGINS'),
    eventStreamsMax: readInt(env, 'EVENT_STREAMS_MAX', 10_000, 0, 1_000_000),
  })
}

function readOidc(env: Env, issuer: string): OidcConfig {
  const audienceText = readString(env, 'OIDC_AUDIENCE')
  if (audienceText === null) {
    throw new ConfigError('OIDC_AUDIENCE', 'is required when OIDC_ISSUER is set')
  }
  const audiences = audienceText
    .split(',')
    .map((audience) => audience.trim())
    .filter((audience) => audience !== '')
  if (audiences.length === 0) {
    throw new ConfigError('OIDC_AUDIENCE', 'lists no audience')
  }
  const rolesPaths = readClaimPaths(env, 'OIDC_ROLES_CLAIM', DEFAULT_ROLES_CLAIM)
  return Object.freeze({
    issuer,
    audiences: Object.freeze(audiences),
    discoveryUrl: readUrl(env, 'OIDC_DISCOVERY_URL') ?? issuer,
    jwksUrl: readUrl(env, 'OIDC_JWKS_URL'),
    rolesPaths,
    clockToleranceS: readInt(env, 'OIDC_CLOCK_TOLERANCE_S', 30, 0, 3600),
    jwksCooldownS: readInt(env, 'OIDC_JWKS_COOLDOWN_S', 30, 0, 86_400),
    jwksMaxAgeS: readInt(env, 'OIDC_JWKS_MAX_AGE_S', 600, 1, 604_800),
  })
}

/** Steps joined by dots; a step is never empty and holds no space (a stray one is a typo, not a claim name). */
const DOT_PATH = /^[^\s.]+(\.[^\s.]+)*$/

/** Comma-separated dot paths, e.g. `realm_access.roles,resource_access.crm.roles`. */
function readClaimPaths(env: Env, name: ConfigVariable, fallback: string): readonly ClaimPath[] {
  const text = readString(env, name) ?? fallback
  const paths = text
    .split(',')
    .map((path) => path.trim())
    .filter((path) => path !== '')
  if (paths.length === 0) throw new ConfigError(name, 'lists no dot path')
  const bad = paths.find((path) => !DOT_PATH.test(path))
  if (bad !== undefined) {
    throw new ConfigError(name, `"${bad}" is not a dot path like ${DEFAULT_ROLES_CLAIM}`)
  }
  return Object.freeze(paths.map(splitClaimPath))
}

export function splitClaimPath(path: string): ClaimPath {
  return Object.freeze(path.split('.'))
}

/** Unset and empty are the same: a variable set to "" in a manifest means "use the default". */
function readString(env: Env, name: ConfigVariable): string | null {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? null : value
}

function readInt(
  env: Env,
  name: ConfigVariable,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = readString(env, name)
  if (text === null) return fallback
  if (!/^\d+$/.test(text)) {
    throw new ConfigError(name, `"${text}" is not a whole number`)
  }
  const value = Number(text)
  if (value < min || value > max) {
    throw new ConfigError(name, `${value} is outside ${min}..${max}`)
  }
  return value
}

function readBoolean(env: Env, name: ConfigVariable, fallback: boolean): boolean {
  const text = readString(env, name)?.toLowerCase()
  if (text === undefined) return fallback
  if (['true', '1', 'yes', 'on'].includes(text)) return true
  if (['false', '0', 'no', 'off'].includes(text)) return false
  throw new ConfigError(name, `"${text}" is not true or false`)
}

function readChoice<T extends string>(
  env: Env,
  name: ConfigVariable,
  choices: readonly T[],
  fallback: T,
): T {
  const text = readString(env, name)
  if (text === null) return fallback
  const choice = choices.find((candidate) => candidate === text.toLowerCase())
  if (choice === undefined) {
    throw new ConfigError(name, `"${text}" is not one of ${choices.join(', ')}`)
  }
  return choice
}

function readUrl(env: Env, name: ConfigVariable): string | null {
  const text = readString(env, name)
  if (text === null) return null
  const { protocol } = parseUrl(name, text, `"${text}" is not a URL`)
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(name, `"${text}" is not an http(s) URL`)
  }
  return text
}

/** `scheme://host[:port]` and nothing more: no path, query, fragment, credentials or trailing slash. */
const ORIGIN_SHAPE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\\\s]+$/i

/** Comma-separated exact origins, e.g. `https://portal.example.com,http://localhost:5173`. */
function readOrigins(env: Env, name: ConfigVariable): readonly string[] {
  const text = readString(env, name)
  if (text === null) return Object.freeze([])
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  if (entries.length === 0) throw new ConfigError(name, 'lists no origin')
  return Object.freeze([...new Set(entries.map((entry) => readOrigin(name, entry)))])
}

/**
 * One origin, serialized the way browsers send `Origin` (scheme and host
 * lowercased, a default port dropped, an international name in punycode), so
 * that `https://Portal.Example.com:443` in the configuration matches what a
 * browser sends and the per-request check stays an exact string look-up.
 */
function readOrigin(name: ConfigVariable, entry: string): string {
  // A browser never sends a wildcard; `https://*.example.com` would parse, and match nothing.
  if (entry.includes('*')) {
    throw new ConfigError(name, `"${entry}": wildcards are not allowed; list each exact origin`)
  }
  if (entry.toLowerCase() === 'null') {
    throw new ConfigError(
      name,
      '"null" is not allowed: sandboxed frames and local files all send it, so it admits any of them',
    )
  }
  const url = parseUrl(name, entry, `"${entry}" is not an origin like https://portal.example.com`)
  // Not echoed: it may hold a password.
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError(name, 'an origin holds no user or password')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(name, `"${entry}" is not an http(s) origin`)
  }
  if (!ORIGIN_SHAPE.test(entry)) {
    throw new ConfigError(
      name,
      `"${entry}" is not an origin: scheme://host[:port] with no path, query, fragment or trailing slash`,
    )
  }
  return url.origin
}

/** Checks the shape only; never echoes the value, which may hold a password. */
function readPostgresUrl(env: Env, name: ConfigVariable): string | null {
  const text = readString(env, name)
  if (text === null) return null
  const { protocol } = parseUrl(
    name,
    text,
    'is not a URL (expected postgres://user:password@host:port/database)',
  )
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError(name, `scheme must be postgres:// or postgresql://, got ${protocol}//`)
  }
  return text
}

function parseUrl(name: ConfigVariable, text: string, whenNotUrl: string): URL {
  try {
    return new URL(text)
  } catch {
    throw new ConfigError(name, whenNotUrl)
  }
}

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
