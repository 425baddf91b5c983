import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { SEEDS_DIR } from '../../src/definitions/import-definitions.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import {
  SEED_FULL_SIDEBAR,
  SEED_OPEN_SIDEBAR,
  SEED_SIDEBAR_BY_ROLE,
} from '../helpers/seed-sidebar.js'
import { createLogCapture, createSeededDatabase, startTestService } from '../helpers/service.js'

/** GET /api/v1/shell/{appKey}: the seed data per role, and every key of the response. */

const logs = createLogCapture()
const db = await createSeededDatabase(t)
// Two apps beside the seeds, written with SQL as an admin tool would: one without a
// branding row, one whose branding row leaves the product name unset.
await db.sql`
  insert into shell.apps (app_key, name, description, home_url)
  values ('hr', 'Human Resources', null, null), ('ops', 'Operations', 'Runbooks', '/ops')`
await db.sql`
  insert into shell.branding (app_key, product_name, primary_color, footer_text)
  values ('ops', null, '#112233', 'ops footer')`
await db.sql`
  insert into shell.menu_items (app_key, item_key, zone, label, href)
  values ('ops', 'runbooks', 'sidebar', 'Runbooks', '/ops/runbooks')`
const { url, token } = await startTestService(t, { logs, db })

interface SeedItem {
  id: string
  kind?: string
  label: string
  icon?: string
  href?: string
  external?: boolean
  roles?: string[]
}
interface SeedApp {
  key: string
  name: string
  description: string | null
  homeUrl: string | null
  branding: Record<string, unknown>
  menus: Record<string, SeedItem[]>
}
const seeds = JSON.parse(await readFile(join(SEEDS_DIR, 'crm.json'), 'utf8')) as { apps: SeedApp[] }
const crm = seeds.apps.find((app) => app.key === 'crm') as SeedApp
const ZONES = ['topbar', 'sidebar', 'footer', 'user-menu'] as const

/** The seed menus (seeds/crm.json), as rendered for a caller with these roles. */
function expectedMenus(roles: readonly string[]): Record<string, unknown[]> {
  const menus: Record<string, unknown[]> = {}
  for (const zone of ZONES) {
    menus[zone] = (crm.menus[zone] ?? [])
      .filter((item) => !item.roles || item.roles.some((role) => roles.includes(role)))
      .map((item) => ({
        id: item.id,
        kind: item.kind ?? 'link',
        label: item.label,
        icon: item.icon ?? null,
        href: item.href ?? null,
        external: item.external ?? false,
        children: [],
      }))
  }
  return menus
}

async function getShell(roles: string[], appKey = 'crm') {
  const response = await httpRequest(url, `/api/v1/shell/${appKey}`, bearer(await token({ roles })))
  return { response, body: response.json<Record<string, Record<string, unknown>>>() }
}

function ids(items: unknown): string[] {
  return (items as { id: string }[]).map((item) => item.id)
}

for (const [roles, sidebar] of SEED_SIDEBAR_BY_ROLE) {
  t.test(
    `the seed data seen with ${roles.length === 0 ? 'no roles' : roles.join('+')}`,
    async (t) => {
      const { response, body } = await getShell(roles)
      t.equal(response.status, 200)
      t.equal(response.headers['content-type'], 'application/json; charset=utf-8')
      t.same(ids(body.menus?.sidebar), sidebar, 'sidebar items of the seeds, in position order')
      t.same(ids(body.menus?.topbar), ['search'])
      t.same(ids(body.menus?.footer), ['docs'])
      t.same(ids(body.menus?.['user-menu']), ['settings', 'support', 'logout'])
      t.strictSame(body.menus, expectedMenus(roles), 'every item field as seeded')
      t.equal(Number(response.headers['content-length']), response.body.length)
    },
  )
}

t.test('a caller with unrelated roles sees what needs no role', async (t) => {
  const { body } = await getShell(['hr-clerk', 'offline_access'])
  t.same(ids(body.menus?.sidebar), SEED_OPEN_SIDEBAR)
})

t.test('every key of the response is present, absent values are null', async (t) => {
  const { response, body } = await getShell(['crm-sales'])
  t.equal(response.status, 200)
  t.same(Object.keys(body), ['app', 'branding', 'user', 'menus', 'locale'])
  t.equal(body.locale, 'en', 'no Accept-Language: the default locale')
  t.strictSame(body.app, {
    key: 'crm',
    name: crm.name,
    description: crm.description,
    homeUrl: crm.homeUrl,
  })
  t.strictSame(body.branding, {
    productName: 'Acme CRM',
    logoUrl: '/crm/assets/logo.svg',
    faviconUrl: '/crm/assets/favicon.ico',
    primaryColor: '#0b5fff',
    accentColor: '#00a37a',
    footerText: 'Acme CRM · internal use only',
    theme: { density: 'comfortable', radius: '6px' },
  })
  t.same(Object.keys(body.user ?? {}), ['sub', 'username', 'name', 'email', 'roles'])
  t.same(Object.keys(body.menus ?? {}).sort(), [...ZONES].sort(), 'all four zones')
  const docs = (body.menus?.footer as Record<string, unknown>[] | undefined)?.[0]
  t.strictSame(docs, {
    id: 'docs',
    kind: 'link',
    label: 'Documentation',
    icon: 'book-open',
    href: 'https://docs.example.com/crm',
    external: true,
    children: [],
  })
})

t.test('the user block comes from the token: roles de-duplicated and sorted', async (t) => {
  const full = await token({
    sub: 'f3c1a2b4-alice',
    username: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    roles: ['crm-sales', 'crm-admin', 'crm-sales', 'b-role', 'a-role'],
  })
  const response = await httpRequest(url, '/api/v1/shell/crm', bearer(full))
  const body = response.json<{ user: unknown; menus: { sidebar: unknown } }>()
  t.strictSame(body.user, {
    sub: 'f3c1a2b4-alice',
    username: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    roles: ['a-role', 'b-role', 'crm-admin', 'crm-sales'],
  })
  t.same(ids(body.menus.sidebar), SEED_FULL_SIDEBAR)

  const bare = await token({ sub: 'bob' })
  const bareBody = (await httpRequest(url, '/api/v1/shell/crm', bearer(bare))).json<{
    user: unknown
  }>()
  t.strictSame(
    bareBody.user,
    { sub: 'bob', username: null, name: null, email: null, roles: [] },
    'claims that are absent are null; no roles is []',
  )
})

t.test('branding without a row: nulls, theme {}, productName is the app name', async (t) => {
  const { response, body } = await getShell([], 'hr')
  t.equal(response.status, 200)
  t.strictSame(body.app, { key: 'hr', name: 'Human Resources', description: null, homeUrl: null })
  t.strictSame(body.branding, {
    productName: 'Human Resources',
    logoUrl: null,
    faviconUrl: null,
    primaryColor: null,
    accentColor: null,
    footerText: null,
    theme: {},
  })
  t.strictSame(body.menus, { topbar: [], sidebar: [], footer: [], 'user-menu': [] }, 'all zones')
})

t.test('branding row without a product name falls back to the app name', async (t) => {
  const { body } = await getShell([], 'ops')
  t.strictSame(body.branding, {
    productName: 'Operations',
    logoUrl: null,
    faviconUrl: null,
    primaryColor: '#112233',
    accentColor: null,
    footerText: 'ops footer',
    theme: {},
  })
  t.same(ids(body.menus?.sidebar), ['runbooks'])
  t.strictSame(body.app, {
    key: 'ops',
    name: 'Operations',
    description: 'Runbooks',
    homeUrl: '/ops',
  })
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
