import { setTimeout as sleep } from 'node:timers/promises'
import { generatedAppKey } from './dataset.js'
import { createHttpProbe } from './http-probe.js'
import type { NodeProcess } from './node-process.js'
import { readMetrics, sample } from './read-metrics.js'

/** Requests in flight while every caller asks for its app. */
const CONCURRENCY = 16

export interface SpreadCallersMemory {
  readonly callers: number
  readonly heapUsedBytes: number
  readonly rssBytes: number
}

/**
 * Callers spread over every app: one token per app (`tokens[i]` asks for the i-th), each kept in
 * the token cache with what its caller was sent last, so the service holds what it keeps per
 * caller for as many apps as there are, far more than its view cache's 500. V8's heap in use and
 * the resident memory are read `restMs` after the last request, once V8 has collected the load's
 * garbage: what stays is what the service keeps.
 */
export async function measureSpreadCallers(
  service: NodeProcess,
  tokens: readonly string[],
  restMs: number,
): Promise<SpreadCallersMemory> {
  const probe = createHttpProbe(service.url)
  let next = 0
  const worker = async () => {
    for (let index = next++; index < tokens.length; index = next++) {
      // The seed app and the generated ones, as the data set has them.
      const appKey = index === 0 ? 'crm' : generatedAppKey(index - 1)
      const path = `/api/v1/shell/${appKey}`
      const response = await probe.get(path, { authorization: `Bearer ${tokens[index]}` })
      if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker)).finally(() => probe.close())
  await sleep(restMs)
  const metrics = await readMetrics(service.url)
  return {
    callers: tokens.length,
    heapUsedBytes: sample(metrics, 'nodejs_heap_size_used_bytes'),
    rssBytes: sample(metrics, 'process_resident_memory_bytes'),
  }
}
