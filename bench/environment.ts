import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Releasers } from '../src/releasers.js'
import { PACKAGE_ROOT } from '../test/helpers/service-process.js'
import { startPrivatePostgres } from '../test/helpers/test-postgres.js'
import {
  AUDIENCES_APP,
  createSeededDatabase,
  generatedAppKey,
  insertAudiencesApp,
  insertGeneratedApps,
} from './dataset.js'
import { createHttpProbe, type ProbeResponse } from './http-probe.js'
import { type BenchUser, generateUsers, startBenchIssuer } from './issuer.js'
import type { TokenPool } from './load-generator.js'
import { startNodeProcess } from './node-process.js'
import type { BenchSettings } from './settings.js'

export const AUDIENCE = 'shell-data'
/** The seed app, in both databases. */
export const SEED_APP = 'crm'
/** Distinct callers, each with a token the services verify once and then keep cached. */
const WARM_USERS = 1_000
/** Longer than any run, so no token expires during a leg. */
const TOKEN_LIFETIME_S = 6 * 3600
/** What bench/baseline-server.mjs replays: recorded responses, and what it verifies tokens with. */
interface BaselineConfig {
  readonly shell: RecordedResponse
  readonly apps: RecordedResponse
  readonly verify: { readonly jwks: unknown; readonly issuer: string; readonly audience: string }
}

interface RecordedResponse {
  /** Base64 of the body bytes. */
  readonly body: string
  /** The service's headers, less those fastify sets itself (length, date, connection). */
  readonly headers: Record<string, string>
}

/** Headers fastify sets by itself on every response; the baseline is given the others. */
const FRAMEWORK_HEADERS = [
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
]

/** What every scenario finds running. */
export type BenchEnvironment = Awaited<ReturnType<typeof setUpEnvironment>>

export async function setUpEnvironment(
  settings: BenchSettings,
  cleanup: Releasers,
  log: (line: string) => void,
) {
  const step = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    const startedAt = performance.now()
    const result = await work()
    log(`${what} (${((performance.now() - startedAt) / 1000).toFixed(1)} s)`)
    return result
  }
  const workDir = await mkdtemp(join(tmpdir(), 'shell-data-bench-'))
  cleanup.add('work folder', () => rm(workDir, { recursive: true, force: true }))
  const writePool = async (name: string, lines: readonly string[]): Promise<TokenPool> => {
    await writeFile(join(workDir, name), `${lines.join('\n')}\n`)
    return { path: join(workDir, name), size: lines.length, next: 0 }
  }

  const postgres = await step('embedded PostgreSQL started', startPrivatePostgres)
  cleanup.add('postgres', () => postgres.remove())
  const createDatabase = (name: string, options: { apps: number }) =>
    step(`database ${name}: the seed app and ${options.apps} generated apps`, async () => {
      const url = postgres.urlFor(name)
      await createSeededDatabase(postgres.adminUrl, url, name)
      return { url, dataset: await insertGeneratedApps(url, options) }
    })
  const largeDatabase = await createDatabase('bench_large', { apps: settings.apps })
  const smallDatabase = await createDatabase('bench_small', { apps: 0 })
  await step(`database bench_small: ${AUDIENCES_APP}, the seed app with audiences`, () =>
    insertAudiencesApp(smallDatabase.url),
  )
  const issuer = await startBenchIssuer(AUDIENCE)
  cleanup.add('identity provider', () => issuer.close())
  const users = generateUsers(WARM_USERS)
  const warmTokens = await step(`${users.length} tokens minted`, () =>
    issuer.mintTokens(users, TOKEN_LIFETIME_S),
  )

  const profileDir = settings.profile
    ? join(PACKAGE_ROOT, 'bench', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'))
    : null
  const start = async (name: string, args: string[], env: Record<string, string> = {}) => {
    const started = await step(`${name} ready`, () => startNodeProcess(name, args, env, profileDir))
    cleanup.add(name, () => started.stop())
    return started
  }
  // As in production: a real issuer (discovery, then JWKS over HTTP), no request logs.
  const startService = (name: string, databaseUrl: string, settings: Record<string, string> = {}) =>
    start(name, ['dist/main.js'], {
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      MIGRATE: 'auto',
      OIDC_ISSUER: issuer.issuer,
      OIDC_DISCOVERY_URL: issuer.issuer,
      OIDC_AUDIENCE: AUDIENCE,
      LOG_LEVEL: 'warn',
      ...settings,
    })
  const large = await startService('service-large', largeDatabase.url)
  const small = await startService('service-small', smallDatabase.url)

  // The headline: the seed app, which real callers of every subset of its roles ask for.
  const hotApp = SEED_APP
  const shellPath = `/api/v1/shell/${hotApp}`
  const responses = await step(`${warmTokens.length} callers warmed on ${hotApp}`, async () => {
    await warmCallers(large.url, shellPath, warmTokens)
    return warmCallers(small.url, shellPath, warmTokens)
  })
  // The baseline replays one response: the caller whose body has the median size.
  const shell = [...responses].sort((a, b) => a.body.length - b.body.length)[
    Math.floor(responses.length / 2)
  ] as ProbeResponse
  const [apps] = (await warmCallers(large.url, '/api/v1/apps', warmTokens.slice(0, 1))) as [
    ProbeResponse,
  ]
  const config: BaselineConfig = {
    shell: { body: shell.body.toString('base64'), headers: withoutFrameworkHeaders(shell) },
    apps: { body: apps.body.toString('base64'), headers: withoutFrameworkHeaders(apps) },
    verify: { jwks: issuer.jwks, issuer: issuer.issuer, audience: AUDIENCE },
  }
  await writeFile(join(workDir, 'baseline.json'), JSON.stringify(config))
  const baseline = await start('baseline', [
    'bench/baseline-server.mjs',
    join(workDir, 'baseline.json'),
  ])
  await expectSameResponse(baseline.url, shellPath, shell)
  await expectSameResponse(baseline.url, '/api/v1/apps', apps)

  let newTokens: Promise<TokenPool> | undefined
  let newUsers: Promise<TokenPool> | undefined
  return {
    largeDatabaseUrl: largeDatabase.url,
    dataset: largeDatabase.dataset,
    /** The service on the seed app plus the generated apps. */
    large,
    /** The service on the seed app and crm-audiences, the seed app with audiences. */
    small,
    /** bench/baseline-server.mjs, replaying service-small's shell and service-large's inventory. */
    baseline,
    /** The app the shell scenarios ask for: the seed app. */
    hotApp,
    /** A generated app in the middle of the large data set: what the reload scenarios change. */
    generatedApp: generatedAppKey(Math.ceil(settings.apps / 2) - 1),
    /** One token per user, cached by the large service once warmed. */
    warmTokens,
    warmPool: await writePool('warm.txt', warmTokens),
    /** The warm tokens, each with its caller's ETag of the hot app (for If-None-Match). */
    conditionalPool: await writePool(
      'conditional.txt',
      warmTokens.map((token, index) => `${token} ${responses[index]?.headers.etag}`),
    ),
    /** Tokens no service has seen, minted on the first call; each call gets a cursor of its own. */
    async newTokenPool(): Promise<TokenPool> {
      // The same users' next tokens (a new jti, iat and session each): what a token refresh brings.
      const owners = Array.from(
        { length: settings.newTokens },
        (_, index) => users[index % users.length] as BenchUser,
      )
      newTokens ??= step(`${owners.length} new tokens minted`, () =>
        issuer.mintTokens(owners, TOKEN_LIFETIME_S).then((tokens) => writePool('new.txt', tokens)),
      )
      return { ...(await newTokens) }
    },
    /** The first warm user's next `count` tokens (a new jti and iat each), as renewals bring them. */
    renewTokens(count: number): Promise<string[]> {
      const owner = users[0] as BenchUser
      return issuer.mintTokens(
        Array.from({ length: count }, () => owner),
        TOKEN_LIFETIME_S,
      )
    },
    /** Tokens of users no service has seen (so bodies no one has been sent): minted on the first call. */
    async newUserPool(): Promise<TokenPool> {
      const strangers = generateUsers(WARM_USERS + settings.newTokens).slice(WARM_USERS)
      newUsers ??= step(`${strangers.length} tokens of new users minted`, () =>
        issuer
          .mintTokens(strangers, TOKEN_LIFETIME_S)
          .then((tokens) => writePool('new-users.txt', tokens)),
      )
      return { ...(await newUsers) }
    },
    /** Body sizes of the responses the baseline replays. */
    recorded: { shellBytes: shell.body.length, appsBytes: apps.body.length },
    profileDir,
    /** A database of a scenario's own: the seed app and `apps` generated ones. */
    createDatabase,
    /** The service on a database, configured as the others and `settings`; stopped at the end of the run. */
    startService,
  }
}

/**
 * One request per token, ten at a time: verifies and caches every caller and
 * renders every role-set variant (in the language `headers` ask for); returns
 * the responses, which must be 200s.
 */
export async function warmCallers(
  url: string,
  path: string,
  tokens: readonly string[],
  headers: Readonly<Record<string, string>> = {},
) {
  const probe = createHttpProbe(url)
  const responses: ProbeResponse[] = new Array(tokens.length)
  let next = 0
  const worker = async () => {
    for (let index = next++; index < tokens.length; index = next++) {
      const response = await probe.get(path, {
        ...headers,
        authorization: `Bearer ${tokens[index]}`,
      })
      if (response.status !== 200) {
        throw new Error(`GET ${path}: ${response.status} ${response.body.toString().slice(0, 300)}`)
      }
      responses[index] = response
    }
  }
  await Promise.all(Array.from({ length: 10 }, worker)).finally(() => probe.close())
  return responses
}

function withoutFrameworkHeaders(response: ProbeResponse): Record<string, string> {
  return Object.fromEntries(
    Object.entries(response.headers).filter(([name]) => !FRAMEWORK_HEADERS.includes(name)),
  )
}

/** The comparisons are fair only if the baseline sends the same bytes and headers (Date aside). */
async function expectSameResponse(url: string, path: string, expected: ProbeResponse) {
  const [actual] = (await warmCallers(url, path, ['any'])) as [ProbeResponse]
  const describe = (response: ProbeResponse) =>
    JSON.stringify(
      Object.entries(response.headers)
        .filter(([name]) => name !== 'date')
        .sort(),
    )
  if (!actual.body.equals(expected.body) || describe(actual) !== describe(expected)) {
    throw new Error(
      `baseline ${path} differs from the service:\n  service:  ${describe(expected)}\n  baseline: ${describe(actual)}`,
    )
  }
}
