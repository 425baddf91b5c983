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

/** The identity provider's settings; null in local mode, where the service is its own issuer. */
export type OidcConfig = ReturnType<typeof readOidc>

export type Config = ReturnType<typeof loadConfig>

/**
 * Reads and checks every setting once; throws ConfigError naming the first bad variable.
 * `databaseUrlRequired`: no embedded PostgreSQL is installed (production files, Docker image).
 */
export function loadConfig(
  env: Env = process.env,
  installation: { readonly databaseUrlRequired: boolean } = { databaseUrlRequired: false },
) {
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
    /** TCP port to listen on. */
    port,
    /** Listen address; local mode only allows loopback addresses. */
    host,
    /**
     * A second port on `host` for the probes and /metrics only, so that they are accepted on a
     * listening socket of their own whatever the API port's backlog; null: unset, all on `port`.
     */
    adminPort: readAdminPort(env, port),
    /** PostgreSQL connection string; null means start an embedded PostgreSQL under `.data/`. */
    databaseUrl,
    /** Session-mode connection for LISTEN (LISTEN does not work through a transaction pooler). */
    feedDatabaseUrl,
    /** `auto` applies migrations at start under an advisory lock; `off` leaves the schema alone. */
    migrate: readChoice(env, 'MIGRATE', ['auto', 'off'] as const, 'auto'),
    /**
     * Seconds served after SIGTERM (/readyz 503) while load balancers stop sending; 0: drain now.
     * Ten minutes is past any load balancer's health checks; a larger value is more likely
     * milliseconds written as seconds than a wish.
     */
    shutdownDelayS: readInt(env, 'SHUTDOWN_DELAY_S', 5, 0, 600),
    oidc,
    /** Log one warn line per failed token verification (rate-limited). */
    authFailureLog: readBoolean(env, 'AUTH_FAILURE_LOG', true),
    /** Verified tokens kept in memory, so repeat callers skip signature checks. */
    tokenCacheMax: readInt(env, 'TOKEN_CACHE_MAX', 10_000, 1, 10_000_000),
    logLevel: readChoice(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    /** One log line per request; off by default because it halves throughput. */
    logRequests: readBoolean(env, 'LOG_REQUESTS', false),
    /** Origins (as browsers write `Origin`) whose pages may call the API; empty: no CORS at all. */
    corsOrigins: readOrigins(env, 'CORS_ORIGINS'),
    /** Open event streams per instance; past it a new one gets 503 (each holds a socket and a file descriptor). */
    eventStreamsMax: readInt(env, 'EVENT_STREAMS_MAX', 10_000, 0, 1_000_000),
    /**
     * Where the instance keeps its last snapshot, to start from while the database is down; null:
     * unset (local mode then keeps it under its data folder, the service decides).
     */
    snapshotFile: readString(env, 'SNAPSHOT_FILE'),
    /**
     * Seconds since its data were read past which the file's snapshot is not served. A week: a
     * weekend's outage is covered; data older than that is rather a forgotten volume.
     */
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

function readOidc(env: Env, issuer: string) {
  const audiences = readList(env, 'OIDC_AUDIENCE')
  if (audiences === null) {
    throw new ConfigError('OIDC_AUDIENCE', 'is required when OIDC_ISSUER is set')
  }
  if (audiences.length === 0) {
    throw new ConfigError('OIDC_AUDIENCE', 'lists no audience')
  }
  return Object.freeze({
    /** Canonical public issuer; a token's `iss` must equal it exactly. */
    issuer,
    /** Accepted `aud` values (any one of them is enough). */
    audiences: Object.freeze(audiences),
    /** Base URL whose `/.well-known/openid-configuration` is fetched; often an in-cluster address. */
    discoveryUrl: readUrl(env, 'OIDC_DISCOVERY_URL') ?? issuer,
    /** Explicit JWKS address; when set, discovery is skipped. */
    jwksUrl: readUrl(env, 'OIDC_JWKS_URL'),
    /** Dot paths to the caller's roles in the payload, split at start; the roles are their union. */
    rolesPaths: readClaimPaths(env, 'OIDC_ROLES_CLAIM', DEFAULT_ROLES_CLAIM),
    /** Seconds of leeway for `exp`, `nbf` and `iat`, for clocks that drift between hosts. */
    clockToleranceS: readInt(env, 'OIDC_CLOCK_TOLERANCE_S', OIDC_DEFAULTS.clockToleranceS, 0, 3600),
    /** Least seconds between two JWKS fetches caused by an unknown `kid`, so forged kids cannot hammer the provider. */
    jwksCooldownS: readInt(env, 'OIDC_JWKS_COOLDOWN_S', OIDC_DEFAULTS.jwksCooldownS, 0, 86_400),
    /** Seconds after which keys are re-fetched even when every `kid` is known, to notice removed keys. */
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
