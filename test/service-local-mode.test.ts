import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { findFreePort } from '../src/embedded/embedded.js'
import { LOCAL_DATA_DIR } from '../src/embedded/locate-database.js'
import { bearer, httpRequest } from './helpers/http-client.js'
import { SEED_FULL_SIDEBAR, SEED_SALES_SIDEBAR } from './helpers/seed-sidebar.js'
import { createSeededDatabase } from './helpers/service.js'
import { runNode, spawnService } from './helpers/service-process.js'

/**
 * Local mode as a developer meets it: the real process, its
 * logged curl, `shell-data token`, and the start refused on bad settings.
 */

const db = await createSeededDatabase(t)

interface ShellBody {
  app: { key: string }
  user: {
    sub: string
    username: string | null
    name: string | null
    email: string | null
    roles: string[]
  }
  menus: { sidebar: { id: string }[] }
}

t.test(
  'local mode: the logged curl works, and shell-data token gives accepted tokens',
  async (t) => {
    const port = await findFreePort()
    const settings = { PORT: String(port), HOST: '127.0.0.1' }
    const service = spawnService(t, { ...settings, DATABASE_URL: db.url })
    const ready = await service.waitForLine(
      (line) => typeof line.curl === 'string',
      'the curl line',
      45_000,
    )
    const curl = String(ready.curl)
    const match = /^curl -H 'Authorization: Bearer ([A-Za-z0-9_.-]+)' (http:\/\/\S+)$/.exec(curl)
    t.ok(match, `a ready-to-paste curl: ${curl.replace(/Bearer \S+/, 'Bearer …')}`)
    const [, token = '', target = ''] = match ?? []
    const address = new URL(target)
    t.equal(address.origin, `http://127.0.0.1:${port}`, 'against the running service')
    t.equal(address.pathname, '/api/v1/shell/crm', 'for the first app')
    t.equal(ready.preview, `http://127.0.0.1:${port}/`, 'the preview page named beside it')
    t.match(String(ready.msg), String(ready.preview), 'in the message too')
    const page = await httpRequest(address.origin, '/')
    t.equal(page.status, 200)
    t.match(page.headers['content-type'], /^text\/html/, 'the preview page answers')

    const response = await httpRequest(address.origin, address.pathname, bearer(token))
    t.equal(response.status, 200)
    const body = response.json<ShellBody>()
    t.equal(body.app.key, 'crm', "the CRM's ShellConfig")
    t.same(
      body.user.roles,
      ['crm-admin', 'crm-manager', 'crm-sales'],
      'every role granted in the data',
    )
    t.same(
      body.menus.sidebar.map((item) => item.id),
      SEED_FULL_SIDEBAR,
      'so the demo user sees every item',
    )

    const discovery = await httpRequest(
      address.origin,
      '/local-issuer/.well-known/openid-configuration',
    )
    t.equal(discovery.status, 200)
    const document = discovery.json<{ issuer: string; jwks_uri: string }>()
    t.equal(document.issuer, `http://127.0.0.1:${port}/local-issuer`)
    const jwks = await httpRequest(address.origin, new URL(document.jwks_uri).pathname)
    t.equal(jwks.status, 200)
    const keys = jwks.json<{ keys: Record<string, unknown>[] }>().keys
    t.ok(keys.length >= 1, 'a published key')
    t.notOk(
      keys.some((key) => 'd' in key),
      'no private key material in the JWKS',
    )
    const keyFile = await stat(join(LOCAL_DATA_DIR, 'local-issuer-key.json'))
    t.equal(keyFile.mode & 0o777, 0o600, 'the key pair is kept with mode 0600')
    const openApi = await httpRequest(address.origin, '/openapi.json')
    t.notOk(
      Object.keys(openApi.json<{ paths: object }>().paths).some((path) =>
        path.startsWith('/local-issuer'),
      ),
      'the local issuer serves the verifier, not clients: the OpenAPI document leaves it out',
    )

    const printed = await runNode(
      'src/cli/main.ts',
      ['token', '--sub', 'alice', '--roles', 'crm-sales', '--ttl', '10m'],
      settings,
    )
    t.equal(printed.code, 0, printed.stderr)
    const aliceToken = printed.stdout.trim()
    t.match(aliceToken, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'one JWT on stdout')
    const claims = JSON.parse(
      Buffer.from(aliceToken.split('.')[1] ?? '', 'base64url').toString(),
    ) as {
      exp: number
      iat: number
      aud: unknown
    }
    t.equal(claims.exp - claims.iat, 600, '--ttl 10m')
    t.equal(claims.aud, 'shell-data', 'the local audience')
    const asAlice = await httpRequest(address.origin, '/api/v1/shell/crm', bearer(aliceToken))
    t.equal(asAlice.status, 200, 'the running service accepts it')
    const aliceBody = asAlice.json<ShellBody>()
    t.equal(aliceBody.user.sub, 'alice')
    t.same(aliceBody.user.roles, ['crm-sales'])
    t.same(
      aliceBody.menus.sidebar.map((item) => item.id),
      SEED_SALES_SIDEBAR,
    )
    const apps = await httpRequest(address.origin, '/api/v1/apps', bearer(aliceToken))
    t.equal(apps.status, 200)

    const forged = `${aliceToken.slice(0, -4)}AAAA`
    const refused = await httpRequest(address.origin, '/api/v1/shell/crm', bearer(forged))
    t.equal(refused.status, 401, 'a tampered local token is refused')

    service.child.kill('SIGTERM')
    t.same(await service.exited, { code: 0, signal: null }, 'stops cleanly')
  },
)

t.test('shell-data token is refused outside local mode', async (t) => {
  const result = await runNode('src/cli/main.ts', ['token'], {
    OIDC_ISSUER: 'https://keycloak.example.com/realms/acme',
    OIDC_AUDIENCE: 'shell-data',
  })
  t.equal(result.code, 1)
  t.equal(result.stdout, '', 'no token printed')
  t.match(result.stderr, /local mode only/)
})

t.test('a bad start: exit code 1 and one stderr line naming the variable', async (t) => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['local mode on 0.0.0.0', { HOST: '0.0.0.0', DATABASE_URL: db.url }, /\bHOST\b/],
    ['local mode on a public address', { HOST: '10.1.2.3', DATABASE_URL: db.url }, /\bHOST\b/],
    ['PORT=abc', { PORT: 'abc', DATABASE_URL: db.url }, /\bPORT\b/],
    ['PORT out of range', { PORT: '70000', DATABASE_URL: db.url }, /\bPORT\b/],
    ['LOG_LEVEL=loud', { LOG_LEVEL: 'loud', DATABASE_URL: db.url }, /\bLOG_LEVEL\b/],
    [
      'a DATABASE_URL that is not PostgreSQL',
      { DATABASE_URL: 'mysql://x@y/z' },
      /\bDATABASE_URL\b/,
    ],
    [
      'OIDC_ISSUER without OIDC_AUDIENCE',
      { OIDC_ISSUER: 'https://idp.example.com/realms/a', DATABASE_URL: db.url },
      /\bOIDC_AUDIENCE\b/,
    ],
  ]
  const results = await Promise.all(
    cases.map(([, settings]) => runNode('src/main.ts', [], { PORT: '1', ...settings })),
  )
  for (const [index, [what, , variable]] of cases.entries()) {
    const result = results[index]
    if (result === undefined) continue
    t.equal(result.code, 1, `${what}: exit code 1`)
    const lines = result.stderr.trimEnd().split('\n')
    t.equal(lines.length, 1, `${what}: one line`)
    t.match(lines[0], variable, `${what}: names the variable`)
    t.equal(result.stdout, '', `${what}: nothing on stdout`)
  }
})
