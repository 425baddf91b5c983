import type { Metrics } from '../metrics.js'
import { KeyFetchError } from './errors.js'

/** A provider that has not answered in 5 s is down for our purposes; waiting longer only piles up requests. */
const FETCH_TIMEOUT_MS = 5_000
/** Real key sets and discovery documents are a few KiB; anything this large is not one. */
const MAX_BODY_CHARS = 1_000_000

/** Fetches one JSON document from the identity provider and reads it with `parse`. */
export type FetchProviderJson = <T>(url: string, parse: (json: unknown) => T) => Promise<T>

/** One `shell_jwks_fetches_total` count per call; `success` only once `parse` took the document. */
export function createProviderFetch(options: {
  fetchImpl: typeof fetch
  metrics: Metrics
  /** Aborted on close, so no fetch outlives the verifier. */
  signal: AbortSignal
}): FetchProviderJson {
  const { fetchImpl, metrics, signal } = options
  return async function fetchProviderJson<T>(url: string, parse: (json: unknown) => T): Promise<T> {
    let parsed: T
    try {
      parsed = parse(await fetchJson(fetchImpl, url, signal))
    } catch (error) {
      metrics.jwksFetches.inc({ result: 'error' })
      if (error instanceof KeyFetchError) throw error
      throw new KeyFetchError(url, describeFetchFailure(error))
    }
    metrics.jwksFetches.inc({ result: 'success' })
    return parsed
  }
}

async function fetchJson(
  fetchImpl: typeof fetch,
  url: string,
  signal: AbortSignal,
): Promise<unknown> {
  const response = await fetchImpl(url, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
  })
  if (!response.ok) {
    await response.body?.cancel()
    throw new KeyFetchError(url, `HTTP ${response.status}`)
  }
  const text = await response.text()
  if (text.length > MAX_BODY_CHARS) throw new KeyFetchError(url, 'response too large')
  try {
    return JSON.parse(text)
  } catch {
    throw new KeyFetchError(url, 'response is not JSON')
  }
}

/** By error name and system code only; fetch's own messages ("fetch failed") say nothing. */
function describeFetchFailure(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown failure'
  if (error.name === 'TimeoutError') return `no answer within ${FETCH_TIMEOUT_MS / 1000} s`
  if (error.name === 'AbortError') return 'aborted (verifier closed)'
  const code = (error.cause as { code?: unknown } | undefined)?.code
  if (typeof code === 'string') return code
  return `${error.name}: ${error.message.slice(0, 200)}`
}
