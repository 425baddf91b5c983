import { generatedAppKey } from '../dataset.js'
import { type BenchEnvironment, SEED_APP, warmCallers } from '../environment.js'
import { createHttpProbe } from '../http-probe.js'
import { readMetrics, sample } from '../read-metrics.js'
import type { Scenario } from '../scenario.js'

const MB = 1024 * 1024
/** The apps' languages: each `en` by default, `de` and `fr` from their labels. */
const LOCALES = ['en', 'de', 'fr'] as const
/** Every app in every locale for this many role sets (the first warm callers'): the cache fills. */
const ROLE_SETS = 2
/** Requests in flight while asking for every app. */
const CONCURRENCY = 16

/**
 * The large service's resident memory while it holds the data set, read
 * twice: after the warm callers asked for the hot app in each locale, then
 * after two callers of distinct role sets asked for every app in each
 * locale, more bodies than the variant cache keeps (an eager build would
 * render them all up front; the service renders on request into a bounded
 * cache). Shown, with no target. It runs after the cached-caller scenarios
 * and before the floods of new tokens and reloads, whose short-lived
 * garbage V8 collects lazily and is no part of holding the data.
 */
export const memory: Scenario = {
  id: 'memory',
  run: async ({ env, log }) => {
    const hotPath = `/api/v1/shell/${env.hotApp}`
    for (const locale of LOCALES) {
      await warmCallers(env.large.url, hotPath, env.warmTokens, { 'accept-language': locale })
    }
    const oneApp = await readMemory(env)
    const startedAt = performance.now()
    const variants = await requestEveryApp(env, env.warmTokens.slice(0, ROLE_SETS))
    const seconds = (performance.now() - startedAt) / 1000
    log(`${variants.requests} requests in ${seconds.toFixed(1)} s`)
    const everyApp = await readMemory(env)
    // Each caller's last shell, in each language, asked for by a browser: its br coding made and kept.
    for (const locale of LOCALES) {
      await warmCallers(env.large.url, hotPath, env.warmTokens, {
        'accept-language': locale,
        'accept-encoding': 'gzip, deflate, br, zstd',
      })
    }
    const withCodings = await readMemory(env)
    const small = await readMetrics(env.small.url)
    const apps = env.dataset.apps + 1
    return {
      rows: [
        {
          scenario: `service RSS, ${apps} apps, ${env.warmTokens.length} callers × ${env.hotApp} × en/de/fr`,
          value: `${oneApp.rssMb.toFixed(0)} MB`,
        },
        {
          scenario: `  then ${ROLE_SETS} role sets × ${apps} apps × en/de/fr (variant cache full)`,
          value: `${everyApp.rssMb.toFixed(0)} MB`,
        },
        {
          scenario: `  then the ${env.warmTokens.length} callers again, browser Accept-Encoding (br kept)`,
          value: `${withCodings.rssMb.toFixed(0)} MB`,
        },
      ],
      notes: [
        `V8 heap used ${oneApp.heapMb.toFixed(0)} MB, then ${everyApp.heapMb.toFixed(0)} MB (garbage included until V8 collects it), ${withCodings.heapMb.toFixed(0)} MB with codings; Buffers outside the heap (the bodies) ${oneApp.externalMb.toFixed(0)} MB, then ${everyApp.externalMb.toFixed(0)} MB, ${withCodings.externalMb.toFixed(0)} MB with codings; service-small (the seed app and crm-audiences): RSS ${(sample(small, 'process_resident_memory_bytes') / MB).toFixed(0)} MB`,
        `${variants.requests} requests (${ROLE_SETS} callers of distinct role sets, each app, each locale by Accept-Language) in ${seconds.toFixed(0)} s found ${variants.distinct} distinct bodies: what an eager build would render; the service renders each on request and keeps at most 64 MiB or 10,000 of them`,
      ],
    }
  },
}

async function readMemory(env: BenchEnvironment) {
  const metrics = await readMetrics(env.large.url)
  return {
    rssMb: sample(metrics, 'process_resident_memory_bytes') / MB,
    heapMb: sample(metrics, 'nodejs_heap_size_used_bytes') / MB,
    externalMb: sample(metrics, 'nodejs_external_memory_bytes') / MB,
  }
}

/** Every (app, caller, locale) once; counts the distinct variant tags (an ETag is `variant.user`). */
async function requestEveryApp(env: BenchEnvironment, tokens: readonly string[]) {
  const appKeys = [
    SEED_APP,
    ...Array.from({ length: env.dataset.apps }, (_, index) => generatedAppKey(index)),
  ]
  const jobs = appKeys.flatMap((appKey) =>
    tokens.flatMap((token) => LOCALES.map((locale) => ({ appKey, token, locale }))),
  )
  const probe = createHttpProbe(env.large.url)
  const variantTags = new Set<string>()
  let next = 0
  const worker = async () => {
    for (let job = jobs[next++]; job !== undefined; job = jobs[next++]) {
      const response = await probe.get(`/api/v1/shell/${job.appKey}`, {
        authorization: `Bearer ${job.token}`,
        'accept-language': job.locale,
      })
      if (response.status !== 200 || response.headers['content-language'] !== job.locale) {
        throw new Error(
          `GET ${job.appKey} in ${job.locale}: ${response.status}, ${response.headers['content-language']}`,
        )
      }
      variantTags.add(`${job.appKey} ${response.headers.etag?.split('.')[0]}`)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker)).finally(() => probe.close())
  return { requests: jobs.length, distinct: variantTags.size }
}
