import { readFileSync } from 'node:fs'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { isLoopback } from '../../src/config/host-address.js'
import { CONFIG_VARIABLES, ConfigError } from '../../src/config/variables.js'

t.test('defaults give local mode on loopback with the embedded database', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 8080)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.databaseUrl, null)
  t.equal(config.oidc, null)
  t.equal(config.migrate, 'auto')
  t.equal(config.authFailureLog, true)
  t.equal(config.tokenCacheMax, 10_000)
  t.equal(config.logRequests, false)
  t.same(config.corsOrigins, [])
  t.equal(config.shutdownDelayS, 5)
  t.ok(Object.isFrozen(config))
})

t.test('a real issuer needs an audience and fills the other OIDC settings', async (t) => {
  t.throws(() => loadConfig({ OIDC_ISSUER: 'https://id.example/realms/x' }), {
    name: 'ConfigError',
    variable: 'OIDC_AUDIENCE',
  })
  const config = loadConfig({
    OIDC_ISSUER: 'https://id.example/realms/x',
    OIDC_AUDIENCE: 'shell, other ,',
    HOST: '0.0.0.0',
  })
  t.same(config.oidc?.audiences, ['shell', 'other'])
  t.equal(config.oidc?.discoveryUrl, 'https://id.example/realms/x')
  t.equal(config.oidc?.jwksUrl, null)
  t.same(config.oidc?.rolesPaths, [['realm_access', 'roles']])
  t.equal(config.oidc?.clockToleranceS, 30)
  t.equal(config.oidc?.jwksCooldownS, 30)
  t.equal(config.oidc?.jwksMaxAgeS, 600)
})

t.test('OIDC_ROLES_CLAIM takes several dot paths, split once at start', async (t) => {
  const config = loadConfig({
    OIDC_ISSUER: 'https://id.example/realms/x',
    OIDC_AUDIENCE: 'a',
    HOST: '0.0.0.0',
    OIDC_ROLES_CLAIM: ' realm_access.roles , resource_access.crm.roles,',
  })
  t.same(config.oidc?.rolesPaths, [
    ['realm_access', 'roles'],
    ['resource_access', 'crm', 'roles'],
  ])
  t.ok(Object.isFrozen(config.oidc?.rolesPaths))
  t.ok(Object.isFrozen(config.oidc?.rolesPaths[1]))
})

t.test('CORS_ORIGINS: exact origins, written as browsers send them', async (t) => {
  const config = loadConfig({
    CORS_ORIGINS:
      ' HTTPS://Portal.Example.COM:443 ,http://localhost:5173,, http://[::1]:8080,https://bücher.example,https://portal.example.com',
  })
  t.same(config.corsOrigins, [
    'https://portal.example.com',
    'http://localhost:5173',
    'http://[::1]:8080',
    'https://xn--bcher-kva.example',
  ])
  t.ok(Object.isFrozen(config.corsOrigins))
})

t.test('CORS_ORIGINS: anything but exact http(s) origins stops the start', async (t) => {
  const bad = [
    '*',
    'https://portal.example.com,*',
    'https://*.example.com',
    'null',
    'NULL',
    ',',
    ' , ',
    'portal.example.com',
    'localhost:5173',
    'https://portal.example.com/',
    'https://portal.example.com/app',
    'https://portal.example.com?x=1',
    'https://portal.example.com#top',
    'https://portal.example.com:99999',
    'https://',
    'ftp://portal.example.com',
    'file:///srv/page.html',
    'chrome-extension://abcdefghijklmnop',
    'https:portal.example.com',
    'https:\\\\portal.example.com',
  ]
  for (const value of bad) {
    const error = t.throws(() => loadConfig({ CORS_ORIGINS: value }), value) as ConfigError
    t.equal(error.variable, 'CORS_ORIGINS', value)
    t.match(error.message, /^CORS_ORIGINS: /)
    t.notOk(error.message.includes('\n'), 'one line')
  }
  const withPassword = t.throws(() =>
    loadConfig({ CORS_ORIGINS: 'https://user:secret@portal.example.com' }),
  ) as ConfigError
  t.equal(withPassword.variable, 'CORS_ORIGINS')
  t.notOk(withPassword.message.includes('secret'), 'a password is never echoed')
})

t.test('every bad value names its variable', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    ...['admin', '-1', '65536', '9090.5', '8080', ' 8080 '].map(
      (value): [Record<string, string>, string] => [{ ADMIN_PORT: value }, 'ADMIN_PORT'],
    ),
    [{ PORT: '9090', ADMIN_PORT: '9090' }, 'ADMIN_PORT'],
    [{ MIGRATE: 'sometimes' }, 'MIGRATE'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_REQUESTS: 'maybe' }, 'LOG_REQUESTS'],
    [{ AUTH_FAILURE_LOG: 'perhaps' }, 'AUTH_FAILURE_LOG'],
    [{ TOKEN_CACHE_MAX: '0' }, 'TOKEN_CACHE_MAX'],
    ...['soon', '-1', '2.5', '5s', '601'].map((value): [Record<string, string>, string] => [
      { SHUTDOWN_DELAY_S: value },
      'SHUTDOWN_DELAY_S',
    ]),
    [{ DATABASE_URL: 'mysql://x@y/z' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ FEED_DATABASE_URL: 'postgres://a@b/c' }, 'FEED_DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u:p@db-a:5432,,db-b/shell' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u:p@db-a:5432,db-b:99999/shell' }, 'DATABASE_URL'],
    [
      { DATABASE_URL: 'postgres://u:p@db-a/shell?target_session_attrs=primary-ish' },
      'DATABASE_URL',
    ],
    [{ OIDC_ISSUER: 'issuer' }, 'OIDC_ISSUER'],
    [{ OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: ' , ' }, 'OIDC_AUDIENCE'],
    [{ OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a', OIDC_JWKS_URL: 'ftp://x' }, 'OIDC_JWKS_URL'],
    [
      { OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a', OIDC_CLOCK_TOLERANCE_S: '-1' },
      'OIDC_CLOCK_TOLERANCE_S',
    ],
    ...['a..b', '.roles', 'roles.', 'realm_access.roles,resource_access..roles', ',', 'a. b'].map(
      (claim): [Record<string, string>, string] => [
        { OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a', OIDC_ROLES_CLAIM: claim },
        'OIDC_ROLES_CLAIM',
      ],
    ),
    [{ HOST: '0.0.0.0' }, 'HOST'],
  ]
  for (const [env, variable] of cases) {
    try {
      loadConfig(env)
      t.fail(`accepted ${JSON.stringify(env)}`)
    } catch (error) {
      t.ok(error instanceof ConfigError, `${variable} gives a ConfigError`)
      t.equal((error as ConfigError).variable, variable)
      t.match((error as Error).message, new RegExp(`^${variable}: `))
      t.notOk((error as Error).message.includes('\n'), 'one line')
    }
  }
})

t.test('without an embedded PostgreSQL, DATABASE_URL is the first thing named', async (t) => {
  // HOST=0.0.0.0 without OIDC_ISSUER is wrong too (the Docker image's case), but names no fix
  // for a missing database.
  const error = t.throws(() =>
    loadConfig({ HOST: '0.0.0.0' }, { databaseUrlRequired: true }),
  ) as ConfigError
  t.equal(error.variable, 'DATABASE_URL')
  t.match(error.message, /no embedded PostgreSQL/)
  t.ok(loadConfig({ DATABASE_URL: 'postgres://a@b/c' }, { databaseUrlRequired: true }))
})

t.test('SHUTDOWN_DELAY_S: whole seconds, 0 for none', async (t) => {
  t.equal(loadConfig({ SHUTDOWN_DELAY_S: '0' }).shutdownDelayS, 0)
  t.equal(loadConfig({ SHUTDOWN_DELAY_S: ' 12 ' }).shutdownDelayS, 12)
  t.equal(loadConfig({ SHUTDOWN_DELAY_S: '' }).shutdownDelayS, 5, 'empty: the default')
  t.equal(loadConfig({ SHUTDOWN_DELAY_S: '600' }).shutdownDelayS, 600)
})

t.test('ADMIN_PORT: unset by default, a port of its own when set', async (t) => {
  t.equal(loadConfig({}).adminPort, null)
  t.equal(loadConfig({ ADMIN_PORT: '' }).adminPort, null, 'empty: unset')
  t.equal(loadConfig({ ADMIN_PORT: '9090' }).adminPort, 9090)
  t.equal(loadConfig({ PORT: '9090', ADMIN_PORT: '8080' }).adminPort, 8080)
  t.equal(loadConfig({ PORT: '0', ADMIN_PORT: '0' }).adminPort, 0, 'any free port, as PORT=0')
  const same = t.throws(() => loadConfig({ ADMIN_PORT: '8080' })) as ConfigError
  t.equal(same.message, 'ADMIN_PORT: 8080 is PORT too; the admin port needs its own')
})

t.test('DATABASE_URL and FEED_DATABASE_URL may name several hosts, tried in order', async (t) => {
  const twoHosts = 'postgres://shell:secret@db-a:5432,db-b:5433/shell'
  const config = loadConfig({
    DATABASE_URL: twoHosts,
    FEED_DATABASE_URL: `${twoHosts}?sslmode=require`,
  })
  t.equal(config.databaseUrl, twoHosts, 'kept as written: the driver tries the hosts')
  t.equal(config.feedDatabaseUrl, `${twoHosts}?sslmode=require`)
  t.ok(loadConfig({ DATABASE_URL: 'postgresql://db-a,db-b,db-c/shell?target_session_attrs=any' }))
})

t.test('a database URL is never echoed in the error', async (t) => {
  const error = t.throws(() => loadConfig({ DATABASE_URL: 'mysql://user:secret@db/x' }))
  t.notOk(String((error as Error).message).includes('secret'))
})

t.test('loopback detection', async (t) => {
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'])
    t.ok(isLoopback(host), host)
  for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com']) t.notOk(isLoopback(host), host)
})

t.test('the parser reads exactly the listed variables', async (t) => {
  const read = new Set<string>()
  const env = new Proxy(
    { OIDC_ISSUER: 'https://id.example/realms/x', OIDC_AUDIENCE: 'a', HOST: '0.0.0.0' },
    {
      get(target, name) {
        if (typeof name === 'string') read.add(name)
        return Reflect.get(target, name)
      },
    },
  )
  loadConfig(env)
  t.same([...read].sort(), [...CONFIG_VARIABLES].sort())
})

t.test(
  "the README's configuration table lists exactly the variables the service reads",
  async (t) => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0] ?? ''
    const listed = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((match) => match[1])
    t.same(listed, [...CONFIG_VARIABLES])
  },
)
