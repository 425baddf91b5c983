import { pino } from 'pino'
import { createTokenVerifier, type TokenVerifier } from '../../src/auth/verify-token.js'
import type { OidcConfig } from '../../src/config/config.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { buildCaller, type Caller } from '../../src/snapshot/caller.js'
import { type JwksServer, startJwksServer } from '../helpers/jwks-server.js'
import { readMetric } from '../helpers/metrics.js'

/** A clock that follows real time plus whatever the test has skipped ahead. */
export interface TestClock {
  now(): number
  advance(ms: number): void
}

export interface LogLine {
  level: number
  msg: string
  [field: string]: unknown
}

export interface VerifierFixture {
  server: JwksServer
  verifier: TokenVerifier<Caller>
  metrics: Metrics
  clock: TestClock
  oidc: OidcConfig
  /** Every line the verifier logged, raw, in order. */
  rawLog: string[]
  log(): LogLine[]
  /** Tokens built by hand (tampered, garbage) that must not reach the log either. */
  track(token: string): string
  /** Raw log lines holding any minted or tracked token, or its signature segment. */
  leaks(): string[]
}

export function createTestClock(): TestClock {
  let skippedMs = 0
  return {
    now: () => Date.now() + skippedMs,
    advance(ms) {
      skippedMs += ms
    },
  }
}

export async function setUpVerifier(
  t: { teardown(fn: () => unknown): void },
  options: {
    oidc?: (server: JwksServer) => Partial<OidcConfig>
    server?: Parameters<typeof startJwksServer>[1]
    failureLog?: boolean
    cacheMax?: number
  } = {},
): Promise<VerifierFixture> {
  const clock = createTestClock()
  const server = await startJwksServer(t, { now: clock.now, ...options.server })
  const oidc: OidcConfig = {
    issuer: server.issuer,
    audiences: ['shell-data', 'other-audience'],
    discoveryUrl: server.issuer,
    jwksUrl: null,
    rolesPaths: [['realm_access', 'roles']],
    clockToleranceS: 30,
    jwksCooldownS: 30,
    jwksMaxAgeS: 600,
    ...options.oidc?.(server),
  }
  const rawLog: string[] = []
  const logger = pino({ level: 'trace' }, { write: (line: string) => rawLog.push(line) })
  const metrics = createMetrics({ defaultMetrics: false })
  const verifier = createTokenVerifier({
    oidc,
    toCaller: buildCaller,
    cacheMax: options.cacheMax ?? 100,
    failureLog: options.failureLog ?? true,
    logger,
    metrics,
    now: clock.now,
  })
  t.teardown(() => verifier.close())
  const tracked: string[] = []
  return {
    server,
    verifier,
    metrics,
    clock,
    oidc,
    rawLog,
    log: () => rawLog.map((line) => JSON.parse(line) as LogLine),
    track(token) {
      tracked.push(token)
      return token
    },
    leaks() {
      const secrets = [...server.minted, ...tracked].flatMap((token) => {
        const signature = token.split('.')[2] ?? ''
        // Short signature segments (forged `none` tokens have none) would match by chance.
        return signature.length >= 16 ? [token, signature] : [token]
      })
      return rawLog.filter((line) => secrets.some((secret) => line.includes(secret)))
    },
  }
}

/** The verifier's one public method, awaited as the authentication hook awaits it. */
export function authenticated(verifier: TokenVerifier<Caller>, token: string): Promise<Caller> {
  return verifier.authenticate(token)
}

/**
 * Whether the token is answered from the cache, as the cache's hit counter
 * tells. A token that is not cached is verified by the same call (counted as
 * a miss); the outcome is awaited and ignored.
 */
export async function isServedFromCache(
  fixture: Pick<VerifierFixture, 'verifier' | 'metrics'>,
  token: string,
): Promise<boolean> {
  const hits = () => readMetric(fixture.metrics.tokenCache, { result: 'hit' })
  const before = await hits()
  await fixture.verifier.authenticate(token).catch(() => undefined)
  return (await hits()) > before
}
