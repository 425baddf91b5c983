/** The environment side of the configuration: which variables, and how one is read and checked. */

/** Every variable the service reads; README, operator guide, tests and bench check against it. */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'ADMIN_PORT',
  'DATABASE_URL',
  'FEED_DATABASE_URL',
  'MIGRATE',
  'SHUTDOWN_DELAY_S',
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
  'SNAPSHOT_FILE',
  'SNAPSHOT_FILE_MAX_AGE_S',
] as const
export type ConfigVariable = (typeof CONFIG_VARIABLES)[number]

export type Env = Readonly<Record<string, string | undefined>>

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

/** Unset and empty are the same: a variable set to "" in a manifest means "use the default". */
export function readString(env: Env, name: ConfigVariable): string | null {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? null : value
}

/** Comma-separated entries, each trimmed, empty ones dropped; null when unset. */
export function readList(env: Env, name: ConfigVariable): string[] | null {
  const text = readString(env, name)
  if (text === null) return null
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
}

export function readInt(
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

export function readBoolean(env: Env, name: ConfigVariable, fallback: boolean): boolean {
  const text = readString(env, name)?.toLowerCase()
  if (text === undefined) return fallback
  if (['true', '1', 'yes', 'on'].includes(text)) return true
  if (['false', '0', 'no', 'off'].includes(text)) return false
  throw new ConfigError(name, `"${text}" is not true or false`)
}

export function readChoice<T extends string>(
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

export function readUrl(env: Env, name: ConfigVariable): string | null {
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
export function readOrigins(env: Env, name: ConfigVariable): readonly string[] {
  const entries = readList(env, name)
  if (entries === null) return Object.freeze([])
  if (entries.length === 0) throw new ConfigError(name, 'lists no origin')
  return Object.freeze([...new Set(entries.map((entry) => readOrigin(name, entry)))])
}

/**
 * One origin, serialized as browsers send `Origin` (scheme and host lowercased, a default port
 * dropped, an international name in punycode), so `https://Portal.Example.com:443` matches what a
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

/** The `host[:port]` list of a connection string: what lies between `user:password@` and `/database`. */
const HOSTS_PART = /^([a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?)([^/?#]*)(.*)$/i

/** libpq's choices; `any` is the default. */
const TARGET_SESSION_ATTRS = [
  'any',
  'read-write',
  'read-only',
  'primary',
  'standby',
  'prefer-standby',
]

/**
 * Checks the shape only; never echoes the value, which may hold a password. Several hosts,
 * comma-separated (`postgres://u:p@db-a:5432,db-b:5432/shell`), are tried in order as libpq
 * tries them (docs/operations.md, "Failover"); each must be a host with an optional port.
 */
export function readPostgresUrl(env: Env, name: ConfigVariable): string | null {
  const text = readString(env, name)
  if (text === null) return null
  const notUrl = 'is not a URL (expected postgres://user:password@host:port/database)'
  const [, prefix, hosts, rest] = HOSTS_PART.exec(text) ?? []
  if (prefix === undefined || hosts === undefined || rest === undefined) {
    throw new ConfigError(name, notUrl)
  }
  const list = hosts.split(',')
  const { protocol, searchParams } = parseUrl(name, `${prefix}${list[0]}${rest}`, notUrl)
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError(name, `scheme must be postgres:// or postgresql://, got ${protocol}//`)
  }
  for (const [index, host] of list.entries()) {
    const parsed = parseUrl(name, `postgres://${host}`, notUrl)
    if (parsed.hostname === '' || parsed.host.toLowerCase() !== host.toLowerCase()) {
      throw new ConfigError(name, `host ${index + 1} of ${list.length} is not host[:port]`)
    }
  }
  const attrs = searchParams.get('target_session_attrs')
  if (attrs !== null && !TARGET_SESSION_ATTRS.includes(attrs)) {
    throw new ConfigError(
      name,
      `target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got "${attrs}"`,
    )
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
