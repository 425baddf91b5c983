/**
 * Compressed bodies through real HTTP: each coding decodes to the identity
 * body byte for byte, has its own strong ETag (the same on every instance),
 * revalidates to a 304 with that tag, and moves with the data; Vary and
 * Content-Length are right on every answer, HEAD included; small bodies and
 * event streams are never compressed, and events carry the tag a GET with
 * the stream request's Accept-Encoding returns.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, type HttpResponse, httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const logs = createLogCapture()
const first = await startTestService(t, { logs })
const second = await startTestService(t, { logs, db: first.db, jwks: first.jwks })
const { url, db } = first

const BROWSER = 'gzip, deflate, br, zstd'
const CODINGS = [
  ['br', 'br'],
  ['gzip', 'gzip'],
  [undefined, 'identity'],
] as const

async function get(path: string, token: string, headers: Record<string, string> = {}, at = url) {
  return httpRequest(at, path, bearer(token, headers))
}

function decode(response: HttpResponse): Buffer {
  const encoding = response.headers['content-encoding']
  if (encoding === 'br') return brotliDecompressSync(response.body)
  if (encoding === 'gzip') return gunzipSync(response.body)
  return response.body
}

const callers = await Promise.all(
  [[], ['crm-sales'], ['crm-manager'], ['crm-admin', 'crm-sales']].map((roles, index) =>
    first.token({ sub: `user-${index}`, roles }),
  ),
)

t.test('each coding decodes to the identity body, for every role set and language', async (t) => {
  for (const token of callers) {
    for (const language of ['en', 'de', 'fr']) {
      const headers = { 'accept-language': language }
      const identity = await get('/api/v1/shell/crm', token, headers)
      t.equal(identity.headers['content-encoding'], undefined)
      for (const [accept, coding] of CODINGS) {
        const response = await get('/api/v1/shell/crm', token, {
          ...headers,
          ...(accept === undefined ? {} : { 'accept-encoding': accept }),
        })
        t.equal(response.status, 200)
        t.equal(response.headers['content-encoding'], coding === 'identity' ? undefined : coding)
        t.equal(Number(response.headers['content-length']), response.body.length, 'exact length')
        t.ok(decode(response).equals(identity.body), `${coding} ${language}: byte for byte`)
      }
    }
  }
})

t.test('a browser gets br, a third of the bytes; the inventory as well', async (t) => {
  const [token = ''] = callers
  const identity = await get('/api/v1/shell/crm', token)
  const browser = await get('/api/v1/shell/crm', token, { 'accept-encoding': BROWSER })
  t.equal(browser.headers['content-encoding'], 'br')
  t.ok(
    browser.body.length < 0.4 * identity.body.length,
    `${browser.body.length} of ${identity.body.length} bytes`,
  )
  // The seed app alone lists in under 1 KiB: twenty more make an inventory worth compressing.
  await db.sql`
    insert into shell.apps (app_key, name, description)
    select 'app-' || n, 'App ' || n, 'A generated app' from generate_series(1, 20) as n`
  await waitFor(async () => (await get('/api/v1/apps', token)).body.length >= 1024, 'the apps')
  const apps = await get('/api/v1/apps', token, { 'accept-encoding': BROWSER })
  t.equal(apps.headers['content-encoding'], 'br')
  t.ok(decode(apps).equals((await get('/api/v1/apps', token)).body))
})

t.test(
  'each coding has its own strong tag, a 304 of its own, and one on every instance',
  async (t) => {
    const [, token = ''] = callers
    const tags = new Map<string, string>()
    for (const [accept, coding] of CODINGS) {
      const headers: Record<string, string> =
        accept === undefined ? {} : { 'accept-encoding': accept }
      const response = await get('/api/v1/shell/crm', token, headers)
      const etag = String(response.headers.etag)
      t.match(etag, /^"[^"]+"$/, `${coding}: strong`)
      tags.set(coding, etag)
      t.equal(
        String((await get('/api/v1/shell/crm', token, headers, second.url)).headers.etag),
        etag,
        `${coding}: the same on the other instance`,
      )
      const revalidated = await get('/api/v1/shell/crm', token, {
        ...headers,
        'if-none-match': etag,
      })
      t.equal(revalidated.status, 304)
      t.equal(
        revalidated.headers.etag,
        etag,
        `${coding}: the 304 carries the tag of the coding chosen`,
      )
      t.equal(revalidated.body.length, 0)
      const head = await httpRequest(url, '/api/v1/shell/crm', {
        ...bearer(token, headers),
        method: 'HEAD',
      })
      t.equal(
        head.headers['content-length'],
        response.headers['content-length'],
        `${coding}: HEAD as GET`,
      )
      t.equal(head.headers['content-encoding'], response.headers['content-encoding'])
      t.equal(head.headers.etag, etag)
    }
    t.equal(new Set(tags.values()).size, 3, 'three tags')
    const gzipTag = tags.get('gzip') ?? ''
    const crossed = await get('/api/v1/shell/crm', token, {
      'accept-encoding': 'br',
      'if-none-match': gzipTag,
    })
    t.equal(crossed.status, 200, "another coding's tag does not match")

    await db.sql`update shell.menu_items set label = 'Home' where app_key = 'crm' and item_key = 'dashboard'`
    await waitFor(
      async () => (await get('/api/v1/shell/crm', token)).headers.etag !== tags.get('identity'),
      'the change served',
    )
    for (const [accept, coding] of CODINGS) {
      const headers: Record<string, string> =
        accept === undefined ? {} : { 'accept-encoding': accept }
      const etag = String((await get('/api/v1/shell/crm', token, headers)).headers.etag)
      t.not(etag, tags.get(coding), `${coding}: the change moved its tag`)
    }
  },
)

t.test(
  'Vary names Accept-Encoding on 200, 304 and 401, of the shell and the inventory',
  async (t) => {
    const [token = ''] = callers
    for (const [path, vary] of [
      ['/api/v1/shell/crm', 'Authorization, Accept-Language, Accept-Encoding'],
      ['/api/v1/apps', 'Authorization, Accept-Encoding'],
    ] as const) {
      const ok = await get(path, token, { 'accept-encoding': BROWSER })
      t.equal(ok.headers.vary, vary, `${path} 200`)
      const notModified = await get(path, token, {
        'accept-encoding': BROWSER,
        'if-none-match': String(ok.headers.etag),
      })
      t.equal(notModified.status, 304)
      t.equal(notModified.headers.vary, vary, `${path} 304`)
      const unauthorized = await httpRequest(url, path, { headers: { 'accept-encoding': BROWSER } })
      t.equal(unauthorized.status, 401)
      t.equal(unauthorized.headers.vary, vary, `${path} 401`)
    }
  },
)

t.test('a body under 1 KiB is sent as it is, with the identity tag', async (t) => {
  await db.sql`insert into shell.apps (app_key, name) values ('tiny', 'Tiny')`
  const [token = ''] = callers
  await waitFor(async () => (await get('/api/v1/shell/tiny', token)).status === 200, 'the new app')
  const identity = await get('/api/v1/shell/tiny', token)
  const asked = await get('/api/v1/shell/tiny', token, { 'accept-encoding': BROWSER })
  t.ok(identity.body.length < 1024, `${identity.body.length} bytes`)
  t.equal(asked.headers['content-encoding'], undefined)
  t.equal(asked.headers.etag, identity.headers.etag)
  t.match(asked.headers.vary, /Accept-Encoding/, 'still varies with it')
})

t.test(
  "events carry the tag a GET with the stream's Accept-Encoding returns, never compressed",
  async (t) => {
    const [token = ''] = callers
    for (const accept of [BROWSER, 'gzip', undefined]) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${token}`,
        ...(accept === undefined ? {} : { 'accept-encoding': accept }),
      }
      const stream = await openEventStream(url, '/api/v1/shell/crm/events', headers)
      t.teardown(() => stream.close())
      const event = await stream.waitForEvents(1)
      t.equal(
        stream.headers['content-encoding'],
        undefined,
        `${accept}: the stream is not compressed`,
      )
      t.match(stream.headers.vary, /Accept-Encoding/)
      const shell = await get(
        '/api/v1/shell/crm',
        token,
        accept === undefined ? {} : { 'accept-encoding': accept },
      )
      t.equal(`"${event.id}"`, shell.headers.etag, `${accept}: the GET's tag`)
      stream.close()
    }
  },
)
