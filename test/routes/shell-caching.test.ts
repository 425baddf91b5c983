import t from 'tap'
import { bearer, httpRequest, rawRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { expectProblem } from '../helpers/problem.js'
import {
  createLogCapture,
  createSeededDatabase,
  signCaller,
  startTestService,
} from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** ETag, Cache-Control, Vary and If-None-Match on the shell endpoint. */

const logs = createLogCapture()
const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
const first = await startTestService(t, { logs, db, jwks })
const salesToken = await signCaller(jwks, { sub: 'alice', username: 'alice', roles: ['crm-sales'] })
const SHELL = '/api/v1/shell/crm'

const baseline = await httpRequest(first.url, SHELL, bearer(salesToken))
const etag = String(baseline.headers.etag)

t.test('a 200 carries a strong ETag, Cache-Control and Vary', async (t) => {
  t.equal(baseline.status, 200)
  t.match(etag, /^"[^"]+"$/, 'strong: quoted, no W/')
  t.equal(baseline.headers['cache-control'], 'private, no-cache')
  t.equal(baseline.headers.vary, 'Authorization, Accept-Language, Accept-Encoding')
  t.equal(baseline.headers['content-language'], 'en')
  const again = await httpRequest(first.url, SHELL, bearer(salesToken))
  t.equal(again.headers.etag, etag, 'stable for the same data and caller')
  t.same(again.body, baseline.body)
})

const MATCHING: [string, () => string][] = [
  ['the exact tag', () => etag],
  ['a list holding the tag', () => `"not-it", ${etag}`],
  ['a list without spaces', () => `"a","b",${etag}`],
  ['the weak form of the tag', () => `W/${etag}`],
  ['a list holding the weak form', () => `W/"old", W/${etag}`],
  ['*', () => '*'],
]

for (const [what, header] of MATCHING) {
  t.test(`If-None-Match with ${what}: 304, no body, the 200's caching headers`, async (t) => {
    const response = await httpRequest(
      first.url,
      SHELL,
      bearer(salesToken, { 'if-none-match': header() }),
    )
    t.equal(response.status, 304)
    t.equal(response.body.length, 0, 'no body')
    t.equal(response.headers.etag, etag)
    t.equal(response.headers['cache-control'], 'private, no-cache')
    t.equal(response.headers.vary, 'Authorization, Accept-Language, Accept-Encoding')
    t.equal(response.headers['content-language'], 'en')
  })
}

const NOT_MATCHING: [string, () => string][] = [
  ['another tag', () => '"something-else"'],
  ['a weak other tag', () => 'W/"something-else"'],
  ['the tag without quotes', () => etag.slice(1, -1)],
  ['a prefix of the tag', () => `${etag.slice(0, -2)}"`],
  ['an empty value', () => ''],
]

for (const [what, header] of NOT_MATCHING) {
  t.test(`If-None-Match with ${what}: 200 with the body`, async (t) => {
    const response = await httpRequest(
      first.url,
      SHELL,
      bearer(salesToken, { 'if-none-match': header() }),
    )
    t.equal(response.status, 200)
    t.equal(response.headers.etag, etag)
    t.same(response.body, baseline.body)
  })
}

t.test('a 304 sends not one byte after its headers', async (t) => {
  const response = await rawRequest(
    first.url,
    `GET ${SHELL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${salesToken}\r\nIf-None-Match: ${etag}\r\nConnection: close\r\n\r\n`,
  )
  t.equal(response.status, 304)
  t.equal(response.body.length, 0)
  t.equal(response.headers.etag, etag)
})

t.test('authentication comes first: 401, never 304', async (t) => {
  const missing = await httpRequest(first.url, SHELL, { headers: { 'if-none-match': '*' } })
  expectProblem(t, missing, 401)
  t.equal(missing.headers.etag, undefined, 'no tag for an anonymous caller')
  const expired = await jwks.sign(
    { sub: 'alice', realm_access: { roles: ['crm-sales'] } },
    { expiresInS: -3600 },
  )
  for (const header of ['*', etag]) {
    const response = await httpRequest(
      first.url,
      SHELL,
      bearer(expired, { 'if-none-match': header }),
    )
    expectProblem(t, response, 401)
    t.match(response.headers['www-authenticate'], /error="invalid_token"/)
  }
})

t.test('HEAD: the headers of the GET, content-length included, and no body', async (t) => {
  const head = await rawRequest(
    first.url,
    `HEAD ${SHELL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${salesToken}\r\nConnection: close\r\n\r\n`,
  )
  t.equal(head.status, 200)
  t.equal(head.body.length, 0, 'nothing after the headers')
  t.equal(head.headers['content-length'], String(baseline.body.length))
  for (const name of ['etag', 'cache-control', 'vary', 'content-type'])
    t.equal(head.headers[name], baseline.headers[name], name)
  const headNotModified = await httpRequest(first.url, SHELL, {
    method: 'HEAD',
    ...bearer(salesToken, { 'if-none-match': etag }),
  })
  t.equal(headNotModified.status, 304)
  t.equal(headNotModified.headers.etag, etag)
})

t.test(
  'different callers get different tags; the same caller with a new token does not',
  async (t) => {
    const tagOf = async (token: string) =>
      String((await httpRequest(first.url, SHELL, bearer(token))).headers.etag)
    const reissued = await jwks.sign(
      { sub: 'alice', preferred_username: 'alice', realm_access: { roles: ['crm-sales'] } },
      { expiresInS: 900 },
    )
    t.not(reissued, salesToken, 'another token')
    t.equal(await tagOf(reissued), etag, 'same content, same tag: the token itself is no input')
    const tags = new Set([
      etag,
      await tagOf(await signCaller(jwks, { sub: 'bob', username: 'alice', roles: ['crm-sales'] })),
      await tagOf(await signCaller(jwks, { sub: 'alice', roles: ['crm-sales'] })),
      await tagOf(
        await signCaller(jwks, {
          sub: 'alice',
          username: 'alice',
          email: 'a@example.com',
          roles: ['crm-sales'],
        }),
      ),
      await tagOf(await signCaller(jwks, { sub: 'alice', username: 'alice', roles: [] })),
      await tagOf(
        await signCaller(jwks, { sub: 'alice', username: 'alice', roles: ['crm-admin'] }),
      ),
    ])
    t.equal(tags.size, 6, 'every different user block or menu gives its own tag')
    const other = await signCaller(jwks, { sub: 'bob', roles: ['crm-sales'] })
    const crossed = await httpRequest(first.url, SHELL, bearer(other, { 'if-none-match': etag }))
    t.equal(crossed.status, 200, "another caller's tag does not match")
  },
)

t.test(
  'the same data and caller give the same tag on another instance and after a restart',
  async (t) => {
    const second = await startTestService(t, { logs, db, jwks })
    const onSecond = await httpRequest(second.url, SHELL, bearer(salesToken))
    t.equal(onSecond.status, 200)
    t.equal(onSecond.headers.etag, etag, 'same tag on a second instance')
    t.same(onSecond.body, baseline.body, 'same bytes')
    const conditional = await httpRequest(
      second.url,
      SHELL,
      bearer(salesToken, { 'if-none-match': etag }),
    )
    t.equal(conditional.status, 304, "the first instance's tag revalidates on the second")
    const appsFirst = await httpRequest(first.url, '/api/v1/apps', bearer(salesToken))
    const appsSecond = await httpRequest(second.url, '/api/v1/apps', bearer(salesToken))
    t.equal(appsSecond.headers.etag, appsFirst.headers.etag, 'same inventory tag')

    await second.close()
    const restarted = await startTestService(t, { logs, db, jwks })
    const afterRestart = await httpRequest(restarted.url, SHELL, bearer(salesToken))
    t.equal(afterRestart.headers.etag, etag, 'same tag after a restart')
    t.same(afterRestart.body, baseline.body)
  },
)

t.test('a change committed in the database shows through HTTP with a new tag', async (t) => {
  const own = await startTestService(t, { logs, jwks })
  const before = await httpRequest(own.url, SHELL, bearer(salesToken))
  t.equal(before.headers.etag, etag, 'same seeds, same tag')
  await own.db.sql`
    update shell.menu_items set label = 'Hot leads' where app_key = 'crm' and item_key = 'leads'`
  let after = before
  await waitFor(async () => {
    after = await httpRequest(own.url, SHELL, bearer(salesToken))
    return after.headers.etag !== etag
  }, 'the change to reach the service')
  t.equal(after.status, 200)
  const leads = after
    .json<{ menus: { sidebar: { id: string; label: string }[] } }>()
    .menus.sidebar.find((item) => item.id === 'leads')
  t.equal(leads?.label, 'Hot leads')
  const stale = await httpRequest(own.url, SHELL, bearer(salesToken, { 'if-none-match': etag }))
  t.equal(stale.status, 200, 'the old tag no longer matches')
  const fresh = await httpRequest(
    own.url,
    SHELL,
    bearer(salesToken, { 'if-none-match': String(after.headers.etag) }),
  )
  t.equal(fresh.status, 304)
  // A caller who cannot see the changed item sees the same page as before.
  const viewer = await signCaller(jwks, { sub: 'carol' })
  const viewerBefore = await httpRequest(first.url, SHELL, bearer(viewer))
  const viewerAfter = await httpRequest(own.url, SHELL, bearer(viewer))
  t.equal(viewerAfter.headers.etag, viewerBefore.headers.etag, 'unaffected variant, same tag')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
