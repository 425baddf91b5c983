import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { createMetrics } from '../../src/metrics.js'
import { DEFAULT_PREVIEW_SUB, PREVIEW_TOKEN_TTL_S } from '../../src/routes/local-issuer.js'
import { startService } from '../../src/service.js'
import { bearer, httpRequest, type RequestOptions } from '../helpers/http-client.js'
import { expectProblem } from '../helpers/problem.js'
import { SEED_SALES_SIDEBAR } from '../helpers/seed-sidebar.js'
import { createLogCapture, createSeededDatabase, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/**
 * The preview page's side of the service over real HTTP: the page and its
 * files, the token and granted-roles helpers and whom they refuse, all in
 * local mode only.
 */

const db = await createSeededDatabase(t)
const dataDir = await mkdtemp(join(tmpdir(), 'shell-data-local-issuer-'))
t.teardown(() => rm(dataDir, { recursive: true, force: true }))
const service = await startService(
  loadConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_URL: db.url }),
  pino({ level: 'silent' }),
  { dataDir, metrics: createMetrics({ defaultMetrics: false }) },
)
t.teardown(() => service.close())
await service.started
await waitFor(() => service.feed.current() !== undefined, 'the first snapshot')
const { url } = service
const host = new URL(url).host

/** What the page's own fetch sends to a local-mode helper. */
const FROM_THE_PAGE = {
  'x-shell-preview': '1',
  origin: url,
  'sec-fetch-site': 'same-origin',
}

function askForToken(roles: unknown, headers: Record<string, string> = FROM_THE_PAGE) {
  return postTokenRequest({ roles }, headers)
}

function postTokenRequest(body: unknown, headers: Record<string, string> = FROM_THE_PAGE) {
  const options: RequestOptions = {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }
  return httpRequest(url, '/local-issuer/preview-token', options)
}

function tokenOf(response: { json<T>(): T }): string {
  return response.json<{ access_token: string }>().access_token
}

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
}

t.test('GET / serves the page, and /preview/ its scripts and styles', async (t) => {
  const page = await httpRequest(url, '/')
  t.equal(page.status, 200)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.match(page.text, '<script type="module" src="/preview/preview.js"></script>')
  t.match(page.headers['content-security-policy'], "frame-ancestors 'none'", 'never framed')
  t.match(page.headers['content-security-policy'], "default-src 'self'", 'talks to this service')
  const script = await httpRequest(url, '/preview/preview.js')
  t.equal(script.status, 200)
  t.equal(script.headers['content-type'], 'text/javascript; charset=utf-8')
  t.match(script.text, "import '/client/v1/shell-frame.js'", 'the frame is the served element')
  for (const file of ['shell-client.js', 'shell-frame.js']) {
    const module = await httpRequest(url, `/client/v1/${file}`)
    t.equal(module.status, 200, `local mode serves ${file} too`)
  }
  for (const gone of ['frame.js', 'service-client.js', 'shell-events.js', 'sse-parser.js']) {
    expectProblem(t, await httpRequest(url, `/preview/${gone}`), 404)
  }
  const styles = await httpRequest(url, '/preview/preview.css')
  t.equal(styles.headers['content-type'], 'text/css; charset=utf-8')
  expectProblem(t, await httpRequest(url, '/preview/nothing.js'), 404)
  expectProblem(t, await httpRequest(url, '/preview/..%2f..%2fpackage.json'), 404)
  const revalidated = await httpRequest(url, '/preview/preview.js', {
    headers: { 'if-none-match': String(page.headers.etag) },
  })
  t.equal(revalidated.status, 200, "the page's tag is not the script's")
  const again = await httpRequest(url, '/preview/preview.js', {
    headers: { 'if-none-match': String(script.headers.etag) },
  })
  t.equal(again.status, 304, 'a script the browser holds is revalidated with a 304')
})

t.test('a short-lived token for the chosen roles, which the API accepts', async (t) => {
  const response = await askForToken(['crm-sales', 'crm-sales'])
  t.equal(response.status, 200)
  t.equal(response.headers['cache-control'], 'no-store', 'never cached')
  const body = response.json<{ access_token: string; token_type: string; expires_in: number }>()
  t.equal(body.token_type, 'Bearer')
  t.equal(body.expires_in, PREVIEW_TOKEN_TTL_S)
  const claims = claimsOf(body.access_token)
  t.equal(Number(claims.exp) - Number(claims.iat), PREVIEW_TOKEN_TTL_S)
  t.equal(claims.iss, `${url}/local-issuer`, 'signed by the local issuer')

  const shell = await httpRequest(url, '/api/v1/shell/crm', bearer(body.access_token))
  t.equal(shell.status, 200)
  const frame = shell.json<{
    user: { name: string; roles: string[] }
    menus: { sidebar: { id: string }[] }
  }>()
  t.equal(frame.user.name, 'Preview User')
  t.same(frame.user.roles, ['crm-sales'])
  t.same(
    frame.menus.sidebar.map((item) => item.id),
    SEED_SALES_SIDEBAR,
  )

  const none = await askForToken([])
  t.equal(none.status, 200, 'no role at all is a choice too')
  const scripted = await askForToken(['crm-admin'], { 'x-shell-preview': '1' })
  t.equal(scripted.status, 200, 'a script on this machine (no Origin, no Sec-Fetch-Site) may ask')
})

t.test('a token for the chosen user id, which the API answers as that user', async (t) => {
  const unnamed = claimsOf(tokenOf(await askForToken(['crm-sales'])))
  t.equal(unnamed.sub, DEFAULT_PREVIEW_SUB, 'no user id: the preview user, as before')
  t.equal(unnamed.sub, 'preview-user')

  const response = await postTokenRequest({ sub: 'alice@example.com', roles: ['crm-sales'] })
  t.equal(response.status, 200)
  const claims = claimsOf(tokenOf(response))
  t.equal(claims.sub, 'alice@example.com', 'the token’s subject is the user id')
  t.equal(claims.preferred_username, 'preview', 'the display claims stay the preview user’s')
  t.equal(claims.name, 'Preview User')
  t.same(claims.realm_access, { roles: ['crm-sales'] })

  const shell = await httpRequest(url, '/api/v1/shell/crm', bearer(tokenOf(response)))
  t.equal(shell.status, 200)
  t.match(shell.json(), {
    user: { sub: 'alice@example.com', name: 'Preview User', roles: ['crm-sales'] },
  })

  const longest = `${'ü'.repeat(199)}😀`
  const accepted: [string, string][] = [
    ['200 characters, some outside the BMP', longest],
    ['spaces and punctuation', 'Alice O’Brien / ops'],
    ['a UUID, as Keycloak gives', '4f1c9a52-7d3e-4b8a-9c61-2e5f0b7a1d93'],
  ]
  for (const [what, sub] of accepted) {
    const token = await postTokenRequest({ sub, roles: [] })
    t.equal(token.status, 200, what)
    t.equal(claimsOf(tokenOf(token)).sub, sub, `${what}: the sub as sent`)
  }
})

t.test('a user id the token endpoint refuses', async (t) => {
  const refused: [string, unknown][] = [
    ['empty', ''],
    ['201 characters', 'x'.repeat(201)],
    ['with a tab', 'alice\tbob'],
    ['with a line break', 'alice\nbob'],
    ['with NUL', 'alice\u0000'],
    ['with DEL', 'alice\u007f'],
    ['with a C1 control (NEL)', 'alice\u0085'],
    ['a number', 42],
    ['a boolean', true],
    ['null', null],
    ['an array of one string', ['alice']],
    ['an object', { sub: 'alice' }],
  ]
  for (const [what, sub] of refused) {
    const response = await postTokenRequest({ sub, roles: ['crm-sales'] })
    const body = expectProblem(t, response, 400)
    t.match(body.detail, /sub/, `${what}: the detail names the field`)
    t.notMatch(response.text, /eyJ/, `${what}: no token`)
  }
})

t.test('every app’s granted roles, for the role picker', async (t) => {
  const response = await httpRequest(url, '/preview/granted-roles', { headers: FROM_THE_PAGE })
  t.equal(response.status, 200)
  t.same(response.json(), { grantedRoles: { crm: ['crm-admin', 'crm-manager', 'crm-sales'] } })
})

t.test('the helpers refuse what is not the preview page on this machine', async (t) => {
  const refusals: [string, Record<string, string>][] = [
    ['without the page’s header (a form, a link, an image)', { origin: url }],
    ['from a page of another site', { ...FROM_THE_PAGE, origin: 'http://evil.example' }],
    [
      'from a page of another port on this machine',
      { ...FROM_THE_PAGE, origin: 'http://127.0.0.1:1' },
    ],
    ['that the browser calls cross-site', { ...FROM_THE_PAGE, 'sec-fetch-site': 'cross-site' }],
    ['that the browser calls same-site', { ...FROM_THE_PAGE, 'sec-fetch-site': 'same-site' }],
    [
      'to a name re-pointed at this machine (DNS rebinding)',
      {
        ...FROM_THE_PAGE,
        host: `evil.example:${new URL(url).port}`,
        origin: `http://evil.example:${new URL(url).port}`,
      },
    ],
  ]
  for (const [what, headers] of refusals) {
    const token = await postTokenRequest({ sub: 'alice', roles: ['crm-admin'] }, headers)
    const body = expectProblem(t, token, 403)
    t.notMatch(token.text, /eyJ/, `a request ${what}: no token`)
    t.type(body.detail, 'string')
    const roles = await httpRequest(url, '/preview/granted-roles', { headers })
    t.equal(roles.status, 403, `granted roles, ${what}`)
  }

  const remote = await service.app.inject({
    method: 'POST',
    url: '/local-issuer/preview-token',
    remoteAddress: '192.0.2.10',
    headers: { ...FROM_THE_PAGE, host, 'content-type': 'application/json' },
    payload: { roles: [], sub: 'alice' },
  })
  t.equal(remote.statusCode, 403, 'a connection from another machine')
  t.match(remote.json(), { detail: 'local-mode helpers answer loopback only' })

  expectProblem(t, await askForToken({ role: 'crm-admin' }), 400)
  expectProblem(t, await askForToken(['']), 400)
  // Taken as sent, not coerced: fastify's default validator made these ['7'] and ['crm-admin'].
  expectProblem(t, await askForToken([7]), 400)
  expectProblem(t, await askForToken('crm-admin'), 400)
  const unknown = await postTokenRequest({ roles: [], username: 'root' })
  t.match(expectProblem(t, unknown, 400).detail, /additional properties/, 'no other property')
  expectProblem(
    t,
    await httpRequest(url, '/local-issuer/preview-token', {
      method: 'POST',
      headers: { ...FROM_THE_PAGE, 'content-type': 'application/json' },
      body: '{}',
    }),
    400,
  )
})

t.test('outside local mode: no page, no preview token, no granted roles', async (t) => {
  const withProvider = await startTestService(t, { logs: createLogCapture() })
  for (const path of ['/', '/preview/preview.js', '/preview/granted-roles']) {
    const response = await httpRequest(withProvider.url, path, { headers: FROM_THE_PAGE })
    expectProblem(t, response, 404)
  }
  const token = await httpRequest(withProvider.url, '/local-issuer/preview-token', {
    method: 'POST',
    headers: { ...FROM_THE_PAGE, 'content-type': 'application/json' },
    body: '{"roles":[]}',
  })
  expectProblem(t, token, 404)
})
