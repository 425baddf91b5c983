import { isLoopback } from './host-address.js'
import {
  ConfigError,
  type ConfigVariable,
  type Env,
  readBoolean,
  readChoice,
  readInt,
  readList,
  readOrigins,
  readPostgresUrl,
  readString,
  readUrl,
} from './variables.js'

/** pino's levels, and `silent`. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

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
  /** Dot paths to the caller's roles in the payload, split at start; the roles are their union. */
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
  /**
   * A second port on `host` for the probes and /metrics only, so that they are accepted on a
   * listening socket of their own whatever the API port's backlog; null: unset, all on `port`.
   */
  readonly adminPort: number | null
  /** PostgreSQL connection string; null means start an embedded PostgreSQL under `.data/`. */
  readonly databaseUrl: string | null
  /** Session-mode connection for LISTEN (LISTEN does not work through a transaction pooler). */
  readonly feedDatabaseUrl: string | null
  /** `auto` applies migrations at start under an advisory lock; `off` leaves the schema alone. */
  readonly migrate: 'auto' | 'off'
  /** Seconds served after SIGTERM (/readyz 503) while load balancers stop sending; 0: drain now. */
  readonly shutdownDelayS: number
  /** Null in local mode, where the service is its own issuer. */
  readonly oidc: OidcConfig | null
  /** Log one warn line per failed token verification (rate-limited). */
  readonly authFailureLog: boolean
  /** Verified tokens kept in memory, so repeat callers skip signature checks. */
  readonly tokenCacheMax: number
  readonly logLevel: (typeof LOG_LEVELS)[number]
  /** One log line per request; off by default because it halves throughput. */
  readonly logRequests: boolean
  /** Origins (as browsers write `Origin`) whose pages may call the API; empty: no CORS at all. */
  readonly corsOrigins: readonly string[]
  /** Open event streams per instance; past it a new one gets 503 (each holds a socket and a file descriptor). */
  readonly eventStreamsMax: number
  /**
   * Where the instance keeps its last snapshot, to start from while the database is down; null:
   * unset (local mode then keeps it under its data folder, the service decides).
   */
  readonly snapshotFile: string | null
  /** Seconds since its data were read past which the file's snapshot is not served. */
  readonly snapshotFileMaxAgeS: number
}

/**
 * Reads and checks every setting once; throws ConfigError naming the first bad variable.
 * `databaseUrlRequired`: no embedded PostgreSQL is installed (production files, Docker image).
 */
export function loadConfig(
  env: Env = process.env,
  installation: { readonly databaseUrlRequired: boolean } = { databaseUrlRequired: false },
): Config {
  const databaseUrl = readPostgresUrl(env, 'DATABASE_URL')
  // First: in the Docker image, which has no PostgreSQL binaries, this is the mistake to name.
  if (databaseUrl === null && installation.databaseUrlRequired) {
    throw new ConfigError(
      'DATABASE_URL',
      'is required: this installation has no embedded PostgreSQL',
    )
  }
  const issuer = readUrl(env, 'OIDC_ISSUER')
  const host = readString(env, 'HOST') ?? '127.0.0.1'
  const oidc = issuer === null ? null : readOidc(env, issuer)
  if (oidc === null && !isLoopback(host)) {
    throw new ConfigError(
      'HOST',
      `local mode (OIDC_ISSUER unset) only listens on a loopback address, got "${host}"; set OIDC_ISSUER for a real identity provider`,
    )
  }
  const feedDatabaseUrl = readPostgresUrl(env, 'FEED_DATABASE_URL') ?? databaseUrl
  if (feedDatabaseUrl !== null && databaseUrl === null) {
    throw new ConfigError('FEED_DATABASE_URL', 'is set but DATABASE_URL is not')
  }
  const port = readInt(env, 'PORT', 8080, 0, 65535)
  return Object.freeze({
    port,
    host,
    adminPort: readAdminPort(env, port),
    databaseUrl,
    feedDatabaseUrl,
    migrate: readChoice(env, 'MIGRATE', ['auto', 'off'] as const, 'auto'),
    // Ten minutes is past any load balancer's health checks; a larger value is
    // more likely milliseconds written as seconds than a wish.
    shutdownDelayS: readInt(env, 'SHUTDOWN_DELAY_S', 5, 0, 600),
    oidc,
    authFailureLog: readBoolean(env, 'AUTH_FAILURE_LOG', true),
    tokenCacheMax: readInt(env, 'TOKEN_CACHE_MAX', 10_000, 1, 10_000_000),
    logLevel: readChoice(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logRequests: readBoolean(env, 'LOG_REQUESTS', false),
    corsOrigins: readOrigins(env, 'CORS_ORIGINS'),
    eventStreamsMax: readInt(env, 'EVENT_STREAMS_MAX', 10_000, 0, 1_000_000),
    snapshotFile: readString(env, 'SNAPSHOT_FILE'),
    // A week: a weekend's outage is covered; data older than that is rather a forgotten volume.
    snapshotFileMaxAgeS: readInt(env, 'SNAPSHOT_FILE_MAX_AGE_S', 604_800, 0, 31_536_000),
  })
}

/** A port number; 0, as for PORT, takes any free one (tests). */
function readAdminPort(env: Env, port: number): number | null {
  if (readString(env, 'ADMIN_PORT') === null) return null
  const adminPort = readInt(env, 'ADMIN_PORT', 0, 0, 65535)
  if (adminPort !== 0 && adminPort === port) {
    throw new ConfigError('ADMIN_PORT', `${adminPort} is PORT too; the admin port needs its own`)
  }
  return adminPort
}

function readOidc(env: Env, issuer: string): OidcConfig {
  const audiences = readList(env, 'OIDC_AUDIENCE')
  if (audiences === null) {
    throw new ConfigError('OIDC_AUDIENCE', 'is required when OIDC_ISSUER is set')
  }
  if (audiences.length === 0) {
    throw new ConfigError('OIDC_AUDIENCE', 'lists no audience')
  }
  return Object.freeze({
    issuer,
    audiences: Object.freeze(audiences),
    discoveryUrl: readUrl(env, 'OIDC_DISCOVERY_URL') ?? issuer,
    jwksUrl: readUrl(env, 'OIDC_JWKS_URL'),
    rolesPaths: readClaimPaths(env, 'OIDC_ROLES_CLAIM', DEFAULT_ROLES_CLAIM),
    clockToleranceS: readInt(env, 'OIDC_CLOCK_TOLERANCE_S', OIDC_DEFAULTS.clockToleranceS, 0, 3600),
    jwksCooldownS: readInt(env, 'OIDC_JWKS_COOLDOWN_S', OIDC_DEFAULTS.jwksCooldownS, 0, 86_400),
    jwksMaxAgeS: readInt(env, 'OIDC_JWKS_MAX_AGE_S', OIDC_DEFAULTS.jwksMaxAgeS, 1, 604_800),
  })
}

/** The timings a provider gets unless told otherwise, the local issuer included. */
const OIDC_DEFAULTS = { clockToleranceS: 30, jwksCooldownS: 30, jwksMaxAgeS: 600 } as const

/** Local mode: the service's own issuer, verified like a real provider (discovery, then JWKS). */
export function localOidcConfig(issuer: string, audience: string): OidcConfig {
  return Object.freeze({
    issuer,
    audiences: [audience],
    discoveryUrl: issuer,
    jwksUrl: null,
    rolesPaths: [splitClaimPath(DEFAULT_ROLES_CLAIM)],
    ...OIDC_DEFAULTS,
  })
}

/** Steps joined by dots; a step is never empty and holds no space (a stray one is a typo, not a claim name). */
const DOT_PATH = /^[^\s.]+(\.[^\s.]+)*$/

/** Comma-separated dot paths, e.g. `realm_access.roles,resource_access.crm.roles`. */
function readClaimPaths(env: Env, name: ConfigVariable, fallback: string): readonly ClaimPath[] {
  const paths = readList(env, name) ?? [fallback]
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
