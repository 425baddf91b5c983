import t from 'tap'
import { bearer, httpRequest, rawRequest } from '../helpers/http-client.js'
import { expectProblem } from '../helpers/problem.js'
import { createLogCapture, createSeededDatabase, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** GET /api/v1/apps: the inventory, sorted by key, with the shell's caching rules. */

const logs = createLogCapture()
const db = await createSeededDatabase(t)
await db.sql`
  insert into shell.apps (app_key, name, description, home_url) values
    ('zeta', 'Zeta', 'Last one', '/zeta'),
    ('crm-legacy', 'Old CRM', null, null),
    ('0-tools', 'Tools', null, '/tools'),
    ('alpha', 'Alpha', null, null)`
await db.sql`update shell.apps set default_locale = 'pt-BR' where app_key = 'zeta'`
const { url, token, service } = await startTestService(t, { logs, db })
const APPS = '/api/v1/apps'
const viewer = await token({ sub: 'viewer' })

t.test(
  'every app, sorted by key, each with key, name, description, homeUrl and locales',
  async (t) => {
    const response = await httpRequest(url, APPS, bearer(viewer))
    t.equal(response.status, 200)
    t.equal(response.headers['content-type'], 'application/json; charset=utf-8')
    const body = response.json<{ apps: Record<string, unknown>[] }>()
    t.same(Object.keys(body), ['apps'])
    t.same(
      body.apps.map((app) => app.key),
      ['0-tools', 'alpha', 'crm', 'crm-legacy', 'zeta'],
    )
    for (const app of body.apps)
      t.same(
        Object.keys(app),
        ['key', 'name', 'description', 'homeUrl', 'defaultLocale', 'locales'],
        `${app.key}: every key`,
      )
    t.strictSame(body.apps[3], {
      key: 'crm-legacy',
      name: 'Old CRM',
      description: null,
      homeUrl: null,
      defaultLocale: 'en',
      locales: ['en'],
    })
    t.strictSame(body.apps[2], {
      key: 'crm',
      name: 'CRM',
      description:
        'Customer relationship management: contacts, accounts, the sales pipeline and customer activities.',
      homeUrl: '/crm',
      defaultLocale: 'en',
      locales: ['de', 'en', 'fr'],
    })
    t.strictSame(body.apps[4]?.locales, ['pt-BR'], 'a default other than en')
    t.equal(body.apps[4]?.defaultLocale, 'pt-BR')
  },
)

t.test('the inventory does not depend on the caller', async (t) => {
  const a = await httpRequest(url, APPS, bearer(viewer))
  const b = await httpRequest(url, APPS, bearer(await token({ sub: 'x', roles: ['crm-admin'] })))
  t.same(a.body, b.body)
  t.equal(a.headers.etag, b.headers.etag)
})

t.test('the inventory is not translated: Accept-Language changes nothing', async (t) => {
  const plain = await httpRequest(url, APPS, bearer(viewer))
  for (const language of ['de', 'fr-CA,fr;q=0.9', '*', 'zz-not-there', 'de;q=;;junk']) {
    const asked = await httpRequest(url, APPS, bearer(viewer, { 'accept-language': language }))
    t.same(asked.body, plain.body, language)
    t.equal(asked.headers.etag, plain.headers.etag)
  }
})

t.test('a label in a new language, committed by SQL, joins the app locales', async (t) => {
  const localesOf = async (key: string) => {
    const body = (await httpRequest(url, APPS, bearer(viewer))).json<{
      apps: { key: string; locales: string[] }[]
    }>()
    return body.apps.find((app) => app.key === key)?.locales
  }
  await db.sql`
    insert into shell.menu_item_labels (menu_item_id, locale, label)
    select id, 'it', 'Contatti' from shell.menu_items where app_key = 'crm' and item_key = 'contacts'`
  await waitFor(async () => (await localesOf('crm'))?.includes('it') === true, 'the new locale')
  t.same(await localesOf('crm'), ['de', 'en', 'fr', 'it'], 'sorted')
  await db.sql`delete from shell.menu_item_labels where locale = 'it'`
  await waitFor(async () => (await localesOf('crm'))?.includes('it') === false, 'it gone')
})

t.test('ETag, Cache-Control, Vary and If-None-Match as on the shell endpoint', async (t) => {
  const response = await httpRequest(url, APPS, bearer(viewer))
  const etag = String(response.headers.etag)
  t.match(etag, /^"[^"]+"$/, 'strong tag')
  t.equal(response.headers['cache-control'], 'private, no-cache')
  t.equal(
    response.headers.vary,
    'Authorization, Accept-Encoding',
    'not translated: no Accept-Language',
  )
  t.equal(response.headers['content-language'], undefined)
  for (const header of [etag, `"x", ${etag}`, `W/${etag}`, '*']) {
    const conditional = await httpRequest(url, APPS, bearer(viewer, { 'if-none-match': header }))
    t.equal(conditional.status, 304, `If-None-Match: ${header}`)
    t.equal(conditional.body.length, 0)
    t.equal(conditional.headers.etag, etag)
    t.equal(conditional.headers['cache-control'], 'private, no-cache')
    t.equal(conditional.headers.vary, 'Authorization, Accept-Encoding')
  }
  const other = await httpRequest(url, APPS, bearer(viewer, { 'if-none-match': '"other"' }))
  t.equal(other.status, 200)
  t.same(other.body, response.body)
  const anonymous = await httpRequest(url, APPS, { headers: { 'if-none-match': '*' } })
  expectProblem(t, anonymous, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer realm="shell"')
})

t.test('HEAD: the headers of the GET, content-length included, and no body', async (t) => {
  const get = await httpRequest(url, APPS, bearer(viewer))
  const head = await rawRequest(
    url,
    `HEAD ${APPS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${viewer}\r\nConnection: close\r\n\r\n`,
  )
  t.equal(head.status, 200)
  t.equal(head.body.length, 0)
  t.equal(head.headers['content-length'], String(get.body.length))
  for (const name of ['etag', 'cache-control', 'vary', 'content-type'])
    t.equal(head.headers[name], get.headers[name], name)
  const anonymousHead = await rawRequest(
    url,
    `HEAD ${APPS} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  )
  t.equal(anonymousHead.status, 401)
  t.equal(anonymousHead.headers['www-authenticate'], 'Bearer realm="shell"')
  t.equal(anonymousHead.body.length, 0)
})

t.test('a new app committed in the database joins the inventory with a new tag', async (t) => {
  const before = await httpRequest(url, APPS, bearer(viewer))
  await db.sql`insert into shell.apps (app_key, name) values ('beta', 'Beta')`
  let after = before
  await waitFor(async () => {
    after = await httpRequest(url, APPS, bearer(viewer))
    return after.headers.etag !== before.headers.etag
  }, 'the new app')
  t.same(
    after.json<{ apps: { key: string }[] }>().apps.map((app) => app.key),
    ['0-tools', 'alpha', 'beta', 'crm', 'crm-legacy', 'zeta'],
  )
  const shell = await httpRequest(url, '/api/v1/shell/beta', bearer(viewer))
  t.equal(shell.status, 200, 'and its shell is served')
  t.equal(service.feed.current()?.appKeys.length, 6)
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
