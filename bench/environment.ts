import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Releasers } from '../src/releasers.js'
import { type PrivatePostgres, startPrivatePostgres } from '../test/helpers/test-postgres.js'
import type { BaselineConfig, RecordedResponse } from './baseline-server.js'
import {
  createSeededDatabase,
  type DatasetSummary,
  generatedAppKey,
  insertGeneratedApps,
} from './dataset.js'
import { createHttpProbe, type HttpProbe, type ProbeResponse } from './http-probe.js'
import {
  type BenchIssuer,
  type BenchUser,
  generateUsers,
  mintTokens,
  startBenchIssuer,
} from './issuer.js'
import { type LoadGenerator, startLoadGenerator } from './load-client.js'
import {
  type BenchProcess,
  PACKAGE_ROOT,
  startBaselineProcess,
  startServiceProcess,
} from './processes.js'
import type { BenchSettings } from './settings.js'

/** The generated app the shell scenarios ask for: the middle one (`app-0500` of 1,000), 50 items over the 20 roles. */
export function pickHotApp(appCount: number): string {
  return generatedAppKey(Math.max(0, Math.ceil(appCount / 2) - 1))
}
/** The seed app, present in both databases: the one-app-of-1,000 scenario asks both for it. */
export const SEED_APP = 'crm'
export const AUDIENCE = 'shell-data'
/** Distinct callers whose verified tokens stay cached during the warm scenarios. */
export const WARM_USERS = 1_000
/** Token lifetime: longer than any run, so no token expires during a leg. */
const TOKEN_LIFETIME_S = 6 * 3600
/** Headers fastify sets by itself on every response; the baseline gets the rest. */
const FRAMEWORK_HEADERS = new Set([
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
])

export interface BenchEnvironment {
  readonly largeDatabaseUrl: string
  readonly smallDatabaseUrl: string
  readonly dataset: DatasetSummary
  readonly issuer: BenchIssuer
  readonly users: readonly BenchUser[]
  /** One token per user, cached by the service after warming. */
  readonly warmTokens: readonly string[]
  /** The generated app of the shell scenarios (see pickHotApp). */
  readonly hotApp: string
  /** ETag of the hot app for each warm token, from the large service. */
  readonly warmEtags: readonly string[]
  readonly freshTokenCount: number
  /** The service on the seeds plus the generated apps. */
  readonly large: BenchProcess
  /** The service on the seeds alone (one app). */
  readonly small: BenchProcess
  readonly baseline: BenchProcess
  readonly load: LoadGenerator
  readonly probes: { readonly large: HttpProbe; readonly small: HttpProbe }
  /** What the baseline replays, and how it compares with what the service sends. */
  readonly recorded: {
    readonly shellBytes: number
    readonly shellBytesMean: number
    readonly appsBytes: number
    readonly check: string
  }
  readonly startupMs: { readonly large: number; readonly small: number }
  readonly profileDir: string | null
}

export async function setUpEnvironment(
  settings: BenchSettings,
  cleanup: Releasers,
  log: (line: string) => void,
): Promise<BenchEnvironment> {
  const step = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    const startedAt = performance.now()
    const result = await work()
    log(`${what} (${((performance.now() - startedAt) / 1000).toFixed(1)} s)`)
    return result
  }

  const postgres: PrivatePostgres = await step('embedded PostgreSQL started', startPrivatePostgres)
  cleanup.add('postgres', () => postgres.remove())
  const largeDatabaseUrl = postgres.urlFor('bench_large')
  const smallDatabaseUrl = postgres.urlFor('bench_small')
  await step('databases migrated and seeded (seeds/crm.json)', async () => {
    await createSeededDatabase(postgres.adminUrl, largeDatabaseUrl, 'bench_large')
    await createSeededDatabase(postgres.adminUrl, smallDatabaseUrl, 'bench_small')
  })
  const dataset = await step(`${settings.apps} apps generated and inserted`, () =>
    insertGeneratedApps(largeDatabaseUrl, settings.apps),
  )

  const issuer = await startBenchIssuer(AUDIENCE)
  cleanup.add('identity provider', () => issuer.close())
  const users = generateUsers(WARM_USERS)
  const warmTokens = await step(`${users.length} warm tokens minted`, () =>
    mintTokens(issuer, users, TOKEN_LIFETIME_S),
  )
  // Fresh tokens of the same users (a new jti, iat and session each): what a token refresh brings.
  const freshUsers = Array.from(
    { length: settings.newTokens },
    (_, index) => users[index % users.length] as BenchUser,
  )
  const freshTokens = await step(`${freshUsers.length} fresh tokens minted`, () =>
    mintTokens(issuer, freshUsers, TOKEN_LIFETIME_S),
  )

  const profileDir = settings.profile
    ? join(PACKAGE_ROOT, 'bench', 'profiles', timestampForFile())
    : null
  if (profileDir !== null) await mkdir(profileDir, { recursive: true })
  const serviceSettings = { issuer: issuer.issuer, audience: AUDIENCE }
  const startService = async (name: string, databaseUrl: string) => {
    const startedAt = performance.now()
    const service = await startServiceProcess(
      name,
      { ...serviceSettings, databaseUrl },
      profileDir,
      { args: settings.serviceArgs, main: settings.serviceMain },
    )
    cleanup.add(name, () => service.stop())
    return { service, ms: Math.round(performance.now() - startedAt) }
  }
  const largeStart = await step('service on the large data set ready', () =>
    startService('service-large', largeDatabaseUrl),
  )
  const smallStart = await step('service on the seeds alone ready', () =>
    startService('service-small', smallDatabaseUrl),
  )
  const large = largeStart.service
  const small = smallStart.service
  const probes = { large: createHttpProbe(large.url), small: createHttpProbe(small.url) }
  cleanup.add('probes', () => {
    probes.large.close()
    probes.small.close()
  })

  const hotApp = pickHotApp(settings.apps)
  const hotResponses = await step(`${warmTokens.length} callers warmed on ${hotApp}`, () =>
    requestForEachToken(probes.large, `/api/v1/shell/${hotApp}`, warmTokens),
  )
  const warmEtags = hotResponses.map((response) => response.headers.etag ?? '')
  // The baseline replays one response: the caller whose body has the median size.
  const bySize = hotResponses.map((response, index) => ({ index, size: response.body.length }))
  bySize.sort((a, b) => a.size - b.size)
  const representative = hotResponses[
    bySize[Math.floor(bySize.length / 2)]?.index ?? 0
  ] as ProbeResponse
  const firstToken = warmTokens[0] ?? ''
  const appsResponse = await probes.large.get('/api/v1/apps', {
    authorization: `Bearer ${firstToken}`,
  })
  expectStatus(appsResponse, 200, 'GET /api/v1/apps')

  const workDir = await mkdtemp(join(tmpdir(), 'shell-data-bench-'))
  cleanup.add('work folder', () => rm(workDir, { recursive: true, force: true }))
  const baselineConfig: BaselineConfig = {
    shell: record(representative),
    apps: record(appsResponse),
    verify: {
      jwks: issuer.jwks as BaselineConfig['verify']['jwks'],
      issuer: issuer.issuer,
      audience: AUDIENCE,
    },
  }
  const configFile = join(workDir, 'baseline.json')
  await writeFile(configFile, JSON.stringify(baselineConfig))
  const baseline = await step('baseline ready', () => startBaselineProcess(configFile, profileDir))
  cleanup.add('baseline', () => baseline.stop())
  const check = await compareWithBaseline(
    baseline.url,
    `/api/v1/shell/${hotApp}`,
    representative,
    appsResponse,
    firstToken,
  )

  const load = await startLoadGenerator(settings.loadgen)
  cleanup.add('load generator', () => load.close())
  await load.setTokens('warm', warmTokens, warmEtags)
  await load.setTokens('fresh', freshTokens)
  // The same tokens with a cursor of their own, for routes without a cache: the service's cursor
  // then only moves with its own legs, so it never comes back to a token it verified recently.
  await load.setTokens('fresh-uncached', freshTokens)

  return {
    largeDatabaseUrl,
    smallDatabaseUrl,
    dataset,
    issuer,
    users,
    warmTokens,
    hotApp,
    warmEtags,
    freshTokenCount: freshTokens.length,
    large,
    small,
    baseline,
    load,
    probes,
    recorded: {
      shellBytes: representative.body.length,
      shellBytesMean: Math.round(
        hotResponses.reduce((sum, response) => sum + response.body.length, 0) / hotResponses.length,
      ),
      appsBytes: appsResponse.body.length,
      check,
    },
    startupMs: { large: largeStart.ms, small: smallStart.ms },
    profileDir,
  }
}

/**
 * One request per token, ten at a time: verifies and caches every caller,
 * renders every role-set variant, and returns each response (all must be 200).
 */
export async function requestForEachToken(
  probe: HttpProbe,
  path: string,
  tokens: readonly string[],
): Promise<ProbeResponse[]> {
  const responses: ProbeResponse[] = new Array(tokens.length)
  let next = 0
  const worker = async () => {
    for (let index = next++; index < tokens.length; index = next++) {
      const response = await probe.get(path, { authorization: `Bearer ${tokens[index]}` })
      expectStatus(response, 200, `GET ${path}`)
      responses[index] = response
    }
  }
  await Promise.all(Array.from({ length: 10 }, worker))
  return responses
}

function record(response: ProbeResponse): RecordedResponse {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(response.headers))
    if (!FRAMEWORK_HEADERS.has(name)) headers[name] = value
  return { body: response.body.toString('base64'), headers }
}

/** Proves the baseline sends the same bytes and headers (all but Date) as the service did. */
async function compareWithBaseline(
  baselineUrl: string,
  shellPath: string,
  shell: ProbeResponse,
  apps: ProbeResponse,
  token: string,
): Promise<string> {
  const probe = createHttpProbe(baselineUrl)
  try {
    for (const [path, expected] of [
      [shellPath, shell],
      ['/api/v1/apps', apps],
    ] as const) {
      const actual = await probe.get(path, { authorization: `Bearer ${token}` })
      expectStatus(actual, 200, `baseline GET ${path}`)
      if (!actual.body.equals(expected.body)) throw new Error(`baseline ${path}: body differs`)
      const strip = (headers: Record<string, string>) =>
        JSON.stringify(
          Object.entries(headers)
            .filter(([name]) => name !== 'date')
            .sort(([a], [b]) => (a < b ? -1 : 1)),
        )
      if (strip(actual.headers) !== strip(expected.headers)) {
        throw new Error(
          `baseline ${path}: headers differ\n  service:  ${strip(expected.headers)}\n  baseline: ${strip(actual.headers)}`,
        )
      }
    }
  } finally {
    probe.close()
  }
  return 'identical body bytes and headers (Date aside) for the shell and apps responses'
}

function expectStatus(response: ProbeResponse, status: number, what: string): void {
  if (response.status !== status) {
    throw new Error(
      `${what}: expected ${status}, got ${response.status}: ${response.body.toString().slice(0, 300)}`,
    )
  }
}

export function timestampForFile(date = new Date()): string {
  return date.toISOString().replace(/[:.]/g, '-')
}
