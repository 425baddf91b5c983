import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose'
import type { Logger } from 'pino'
import type { OidcConfig } from '../config/config.js'
import type { Metrics } from '../metrics.js'
import { KeyFetchError, summarizeError } from './errors.js'
import { locateJwks } from './jwks-location.js'
import { createProviderFetch } from './provider-fetch.js'

/** One fetched key set, immutable; a refresh replaces it whole. */
export interface KeySet {
  readonly resolveKey: JWTVerifyGetKey
  /** kid (`''` if none) -> fingerprint of its key material: a refresh sees what left or changed. */
  readonly fingerprints: ReadonlyMap<string, string>
  readonly fetchedAtMs: number
}

/**
 * While the provider is down and no set was ever fetched, each request would start a fetch: one
 * attempt a second notices its return; the requests in between fail fast with keys_unavailable.
 */
const RETRY_AFTER_FAILURE_MS = 1_000

/** Unlike jose's createRemoteJWKSet, keeps the last good set in use for as long as fetches fail. */
export function createKeyStore(options: {
  oidc: OidcConfig
  fetchImpl: typeof fetch
  metrics: Metrics
  logger: Logger
  now: () => number
  /** Called with the kids (`''` = keys without kid) that left the set or changed. */
  onKeysRemoved: (kids: ReadonlySet<string>) => void
}) {
  const { oidc, logger, now, onKeysRemoved } = options
  const cooldownMs = oidc.jwksCooldownS * 1000
  const maxAgeMs = oidc.jwksMaxAgeS * 1000
  // With keys in hand a failed refresh is no emergency: retry it no faster than unknown kids may.
  const staleRetryMs = Math.max(RETRY_AFTER_FAILURE_MS, cooldownMs)
  const closing = new AbortController()
  const fetchProviderJson = createProviderFetch({
    fetchImpl: options.fetchImpl,
    metrics: options.metrics,
    signal: closing.signal,
  })

  let keySet: KeySet | undefined
  let inFlight: Promise<KeySet> | undefined
  // Forgotten after a failure, so a provider that moved its jwks_uri is rediscovered.
  let discoveredJwksUrl: string | undefined
  let lastFailure: { atMs: number; error: KeyFetchError } | undefined
  // None yet: the first unknown kid may fetch at once.
  let lastUnknownKidFetchAtMs = Number.NEGATIVE_INFINITY

  async function fetchKeySet(): Promise<KeySet> {
    try {
      discoveredJwksUrl ??= await locateJwks(oidc, fetchProviderJson)
      const next = await fetchProviderJson(discoveredJwksUrl, (json) => buildKeySet(json, now()))
      installKeySet(next)
      lastFailure = undefined
      return next
    } catch (error) {
      const failure =
        error instanceof KeyFetchError
          ? error
          : new KeyFetchError(discoveredJwksUrl ?? oidc.discoveryUrl, summarizeError(error).message)
      lastFailure = { atMs: now(), error: failure }
      discoveredJwksUrl = undefined
      logger.warn(
        { url: failure.url, reason: failure.reason, keepingLastGoodKeys: keySet !== undefined },
        'identity provider keys could not be fetched',
      )
      throw failure
    }
  }

  function installKeySet(next: KeySet): void {
    const previous = keySet
    keySet = next
    if (previous === undefined) return
    const removed = new Set<string>()
    for (const [kid, fingerprint] of previous.fingerprints) {
      if (next.fingerprints.get(kid) !== fingerprint) removed.add(kid)
    }
    if (removed.size === 0) return
    logger.info({ removedKids: [...removed] }, 'identity provider keys left the key set')
    onKeysRemoved(removed)
  }

  /** Concurrent callers share one fetch. */
  function startFetch(): Promise<KeySet> {
    inFlight ??= fetchKeySet().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  function failedWithin(windowMs: number): boolean {
    return lastFailure !== undefined && now() - lastFailure.atMs < windowMs
  }

  /** Starts a background refresh once the set is older than the max age; never throws, never waits. */
  function refreshIfStale(): void {
    if (keySet === undefined || inFlight !== undefined || closing.signal.aborted) return
    if (now() - keySet.fetchedAtMs < maxAgeMs || failedWithin(staleRetryMs)) return
    // The failure is logged and counted inside; the last good set simply stays.
    startFetch().catch(() => undefined)
  }

  return {
    refreshIfStale,

    /** The current key set, fetched on first use; throws KeyFetchError only while no set was ever fetched. */
    async load(): Promise<KeySet> {
      if (keySet !== undefined) {
        refreshIfStale()
        return keySet
      }
      if (inFlight !== undefined) return inFlight
      if (closing.signal.aborted) throw new KeyFetchError(oidc.discoveryUrl, 'verifier closed')
      if (lastFailure !== undefined && failedWithin(RETRY_AFTER_FAILURE_MS)) {
        throw new KeyFetchError(
          lastFailure.error.url,
          `${lastFailure.error.reason} (retry pending)`,
        )
      }
      return startFetch()
    },

    /**
     * A fresh set after an unknown kid, or null when the cooldown forbids a fetch; throws
     * KeyFetchError if the provider is unreachable: 503 (keys unavailable), not 401 (unknown kid).
     */
    async refetchForUnknownKid(): Promise<KeySet | null> {
      if (inFlight !== undefined) return inFlight
      const startedAtMs = now()
      if (startedAtMs - lastUnknownKidFetchAtMs < cooldownMs) {
        // The permitted re-fetch happened; if it failed, the provider is still the problem, not the token.
        if (lastFailure !== undefined && lastFailure.atMs >= lastUnknownKidFetchAtMs)
          throw lastFailure.error
        return null
      }
      if (closing.signal.aborted) return null
      if (lastFailure !== undefined && failedWithin(RETRY_AFTER_FAILURE_MS)) throw lastFailure.error
      lastUnknownKidFetchAtMs = startedAtMs
      return startFetch()
    },

    current() {
      return keySet
    },

    close() {
      closing.abort()
    },
  }
}

/** Throws (inside the fetch, so it counts as a failed fetch) when the document is not a key set. */
function buildKeySet(json: unknown, fetchedAtMs: number): KeySet {
  const keySet = json as JSONWebKeySet
  const resolveKey = createLocalJWKSet(keySet)
  const materialsByKid = new Map<string, string[]>()
  for (const { kid, kty, crv, n, e, x, y, alg, use } of keySet.keys) {
    const id = typeof kid === 'string' ? kid : ''
    const material = JSON.stringify([kty, crv, n, e, x, y, alg, use])
    materialsByKid.set(id, [...(materialsByKid.get(id) ?? []), material])
  }
  const fingerprints = new Map<string, string>()
  for (const [kid, materials] of materialsByKid) fingerprints.set(kid, materials.sort().join('|'))
  return { resolveKey, fingerprints, fetchedAtMs }
}
