import { readMetrics, sample } from '../read-metrics.js'
import { passOrMiss, type Scenario } from '../scenario.js'

/** Issue 6: the large data set fits a small container with room to spare. */
const MAX_RSS_MB = 256
const MB = 1024 * 1024

/**
 * The large service's resident memory while it holds the data set. It runs
 * after the cached-caller scenarios and before the floods of new tokens and
 * reloads, whose short-lived garbage V8 collects lazily and is no part of
 * holding the data.
 */
export const memory: Scenario = {
  id: 'memory',
  run: async ({ env }) => {
    const large = await readMetrics(env.large.url)
    const small = await readMetrics(env.small.url)
    const rssMb = sample(large, 'process_resident_memory_bytes') / MB
    const heapMb = sample(large, 'nodejs_heap_size_used_bytes') / MB
    return {
      rows: [
        {
          scenario: `service RSS holding ${env.dataset.apps + 1} apps`,
          value: `${rssMb.toFixed(0)} MB`,
          target: `<= ${MAX_RSS_MB} MB`,
          result: passOrMiss(rssMb <= MAX_RSS_MB),
        },
      ],
      notes: [
        `heap used ${heapMb.toFixed(0)} MB; the service on the seed app alone: RSS ${(sample(small, 'process_resident_memory_bytes') / MB).toFixed(0)} MB`,
      ],
    }
  },
}
