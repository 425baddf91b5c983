import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { readAppDefinitions } from '../../src/definitions/app-definitions.js'
import { createTestDatabase } from '../helpers/database.js'
import { ACCEPTED_LINKS, REFUSED_LINKS } from '../helpers/link-cases.js'
import { dumpRows, runCli } from '../helpers/shell-data-cli.js'
import { waitFor } from '../helpers/wait.js'

const dir = await mkdtemp(join(tmpdir(), 'shell-data-import-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
let fileCount = 0
async function writeDefinitions(content: unknown): Promise<string> {
  const file = join(dir, `definitions-${fileCount++}.json`)
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2))
  return file
}

t.test(
  'seeds/crm.json into an empty database gives exactly the rows of the initial data',
  async (t) => {
    const db = await createTestDatabase(t)
    const result = await runCli(db.url, 'import', 'seeds/crm.json')
    t.equal(result.code, 0, result.stderr)
    t.equal(result.stdout, 'crm: created\n')
    const apps = await db.sql`select app_key from shell.apps`
    t.same(
      apps.map((row) => row.app_key),
      ['crm'],
    )
    const items = await db.sql<
      { zone: string; item_key: string; kind: string; external: boolean; roles: string[] }[]
    >`
    select m.zone, m.item_key, m.kind, m.external,
           coalesce(array_agg(g.role order by g.role) filter (where g.role is not null), '{}') as roles
    from shell.menu_items m left join shell.menu_role_grants g on g.menu_item_id = m.id
    group by m.id order by m.zone, m.position, m.id`
    const byZone = (zone: string) =>
      items
        .filter((item) => item.zone === zone)
        .map((item) => [item.item_key, item.roles.join('+')])
    t.same(byZone('sidebar'), [
      ['dashboard', ''],
      ['contacts', ''],
      ['accounts', ''],
      ['leads', 'crm-sales'],
      ['opportunities', 'crm-sales'],
      ['activities', ''],
      ['reports', 'crm-admin+crm-manager'],
      ['admin', 'crm-admin'],
    ])
    t.same(byZone('topbar'), [['search', '']])
    t.same(byZone('user-menu'), [
      ['settings', ''],
      ['support', ''],
      ['logout', ''],
    ])
    t.same(byZone('footer'), [['docs', '']])
    t.equal(items.find((item) => item.item_key === 'search')?.kind, 'search')
    t.equal(items.find((item) => item.item_key === 'logout')?.kind, 'action')
    t.same(
      items.filter((item) => item.external).map((item) => item.item_key),
      ['docs'],
    )
    t.equal(items.length, 13, 'no other item')
    const labels = await db.sql<{ locale: string; items: number }[]>`
      select locale, count(*)::int as items from shell.menu_item_labels group by locale order by locale`
    t.same(
      labels,
      [
        { locale: 'de', items: 13 },
        { locale: 'fr', items: 13 },
      ],
      'every item in German and in French',
    )
    const [leads] = await db.sql<{ de: string; fr: string }[]>`
      select max(l.label) filter (where l.locale = 'de') as de, max(l.label) filter (where l.locale = 'fr') as fr
      from shell.menu_items m join shell.menu_item_labels l on l.menu_item_id = m.id
      where m.item_key = 'leads'`
    t.same(leads, { de: 'Interessenten', fr: 'Prospects' })
  },
)

t.test('labels and a default locale go in, come out of export, and change alone', async (t) => {
  const db = await createTestDatabase(t)
  const app = {
    key: 'kiosk',
    name: 'Kiosk',
    defaultLocale: 'de',
    menus: {
      sidebar: [
        {
          id: 'home',
          label: 'Start',
          labels: { en: 'Home', 'fr-CA': 'Accueil', 'de-CH': 'Startseite' },
          children: [{ id: 'news', label: 'Neuigkeiten', labels: { en: 'News' } }],
        },
      ],
    },
  }
  const first = await runCli(db.url, 'import', await writeDefinitions({ apps: [app] }))
  t.equal(first.code, 0, first.stderr)
  const [row] = await db.sql`select default_locale from shell.apps where app_key = 'kiosk'`
  t.equal(row?.default_locale, 'de')
  const exported = JSON.parse((await runCli(db.url, 'export', 'kiosk')).stdout)
  t.equal(exported.apps[0].defaultLocale, 'de')
  t.same(exported.apps[0].menus.sidebar[0].labels, {
    'de-CH': 'Startseite',
    en: 'Home',
    'fr-CA': 'Accueil',
  })
  t.same(Object.keys(exported.apps[0].menus.sidebar[0].labels), ['de-CH', 'en', 'fr-CA'], 'sorted')
  t.same(exported.apps[0].menus.sidebar[0].children[0].labels, { en: 'News' })
  const again = await runCli(db.url, 'import', await writeDefinitions(exported))
  t.equal(again.stdout, 'kiosk: unchanged\n', 'export then import: unchanged')

  const changed = structuredClone(app)
  const [home] = changed.menus.sidebar
  if (home !== undefined) home.labels.en = 'Start page'
  const update = await runCli(db.url, 'import', await writeDefinitions({ apps: [changed] }))
  t.equal(update.stdout, 'kiosk: updated\n')
  const labels = await db.sql<{ locale: string; label: string }[]>`
    select l.locale, l.label from shell.menu_item_labels l join shell.menu_items m on m.id = l.menu_item_id
    where m.item_key = 'home' order by l.locale`
  t.same(labels, [
    { locale: 'de-CH', label: 'Startseite' },
    { locale: 'en', label: 'Start page' },
    { locale: 'fr-CA', label: 'Accueil' },
  ])
  const plain = await runCli(
    db.url,
    'import',
    await writeDefinitions({ apps: [{ key: 'plain', name: 'Plain' }] }),
  )
  t.equal(plain.code, 0, plain.stderr)
  const plainExport = JSON.parse((await runCli(db.url, 'export', 'plain')).stdout)
  t.notOk('defaultLocale' in plainExport.apps[0], 'the default en is left out of the export')
})

t.test('rollouts and windows go in, come out of export in UTC, and change alone', async (t) => {
  const db = await createTestDatabase(t)
  const app = {
    key: 'launch',
    name: 'Launch',
    menus: {
      sidebar: [
        { id: 'home', label: 'Home' },
        {
          id: 'beta',
          label: 'Beta',
          rollout: 25,
          visibleFrom: '2026-12-01T01:00:00+01:00',
          visibleUntil: '2027-01-01T00:00:00.250Z',
        },
      ],
    },
  }
  t.equal((await runCli(db.url, 'import', await writeDefinitions({ apps: [app] }))).code, 0)
  const [row] = await db.sql`
    select rollout_percent, visible_from = '2026-12-01T00:00:00Z' as from_ok,
           visible_until = '2027-01-01T00:00:00.25Z' as until_ok
    from shell.menu_items where item_key = 'beta'`
  t.same(row, { rollout_percent: 25, from_ok: true, until_ok: true }, 'as rows')
  const exported = JSON.parse((await runCli(db.url, 'export', 'launch')).stdout)
  t.same(exported.apps[0].menus.sidebar[1], {
    id: 'beta',
    label: 'Beta',
    rollout: 25,
    visibleFrom: '2026-12-01T00:00:00Z',
    visibleUntil: '2027-01-01T00:00:00.250Z',
  })
  t.same(Object.keys(exported.apps[0].menus.sidebar[0]), ['id', 'label'], 'nothing for the others')
  const again = await runCli(db.url, 'import', await writeDefinitions(exported))
  t.equal(again.stdout, 'launch: unchanged\n', 'export then import: unchanged')
  const raised = structuredClone(exported)
  raised.apps[0].menus.sidebar[1].rollout = 50
  delete raised.apps[0].menus.sidebar[1].visibleUntil
  const plan = await runCli(db.url, 'import', '--dry-run', await writeDefinitions(raised))
  t.equal(plan.code, 0, plan.stderr)
  t.match(plan.stdout, /~ item beta: rollout 25 % → 50 %/)
  t.match(plan.stdout, /~ item beta: visibleUntil 2027-01-01T00:00:00\.250Z → unbounded/)
})

t.test('export then import changes nothing and sends no notification', async (t) => {
  const db = await createTestDatabase(t)
  t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
  const exported = await runCli(db.url, 'export')
  t.equal(exported.code, 0, exported.stderr)
  const before = await dumpRows(db.sql)
  const listener = postgres(db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => listener.end())
  const received: string[] = []
  await listener.listen('shell_changed', (payload) => received.push(payload))
  const again = await runCli(db.url, 'import', await writeDefinitions(exported.stdout))
  t.equal(again.code, 0, again.stderr)
  t.equal(again.stdout, 'crm: unchanged\n')
  t.same(await dumpRows(db.sql), before, 'every row as it was')
  await db.sql`select pg_notify('shell_changed', 'marker')`
  await waitFor(() => received.includes('marker'), 'the marker notification')
  t.same(received, ['marker'], 'no notification but our marker')
  const single = await runCli(db.url, 'export', 'crm')
  t.same(JSON.parse(single.stdout), JSON.parse(exported.stdout), 'export of one app')
  const unknown = await runCli(db.url, 'export', 'nope')
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /no app "nope"/)
})

t.test('an import replaces the app whole: removed items, grants and branding go', async (t) => {
  const db = await createTestDatabase(t)
  t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
  const smaller = {
    apps: [
      {
        key: 'crm',
        name: 'CRM',
        menus: {
          sidebar: [
            {
              id: 'reports',
              label: 'Reports',
              roles: ['crm-manager'],
              children: [{ id: 'sales', label: 'Sales', href: '/r/s' }],
            },
            { id: 'dashboard', label: 'Dashboard', href: '/crm' },
          ],
        },
      },
    ],
  }
  const result = await runCli(db.url, 'import', await writeDefinitions(smaller))
  t.equal(result.stdout, 'crm: updated\n')
  const [app] = await readAppDefinitions(db.sql, ['crm'])
  t.equal(app?.branding, null)
  t.same(
    app?.menus.sidebar.map((item) => [item.id, item.roles, item.children.map((child) => child.id)]),
    [
      ['reports', ['crm-manager'], ['sales']],
      ['dashboard', [], []],
    ],
  )
  t.same(app?.menus.topbar, [])
})

const validApp = { key: 'ok', name: 'OK' }

/** Each refused link in each of the four fields: an app per link, an item per link. */
const appsWithLinks = (links: readonly string[]) =>
  links.map((link, index) => ({
    key: `links-${index}`,
    name: `Links ${index}`,
    homeUrl: link,
    branding: { logoUrl: link, faviconUrl: link },
    menus: { sidebar: [{ id: `item-${index}`, label: 'Item', href: link }] },
  }))
const LINK_PROBLEM = 'not a path, a relative reference or an https:, http: or mailto: URL'

t.test(
  'paths, relative references and https:, http: and mailto: URLs go in and come out',
  async (t) => {
    const db = await createTestDatabase(t)
    const apps = appsWithLinks(ACCEPTED_LINKS)
    const result = await runCli(db.url, 'import', await writeDefinitions({ apps }))
    t.equal(result.code, 0, result.stderr)
    const stored = new Map((await readAppDefinitions(db.sql)).map((app) => [app.key, app]))
    for (const { key, homeUrl: link } of apps) {
      const app = stored.get(key)
      t.same(
        [
          app?.homeUrl,
          app?.branding?.logoUrl,
          app?.branding?.faviconUrl,
          app?.menus.sidebar[0]?.href,
        ],
        [link, link, link, link],
        `${JSON.stringify(link)} stored in each field`,
      )
    }
  },
)

const badFiles: Array<[string, unknown, Array<[string, RegExp]>]> = [
  ['JSON syntax', '{"apps": [', [['$', /not valid JSON/]]],
  ['no apps', {}, [['$.apps', /is required/]]],
  ['unknown top-level field', { apps: [], extra: 1 }, [['$.extra', /not a known field/]]],
  [
    'bad app fields',
    { apps: [{ key: 'Bad Key', name: '', colour: 'red', description: 5 }] },
    [
      ['$.apps[0].key', /must match/],
      ['$.apps[0].name', /must NOT have fewer than 1 characters/],
      ['$.apps[0].colour', /not a known field/],
      ['$.apps[0].description', /must be string,null/],
    ],
  ],
  ['missing name', { apps: [{ key: 'x' }] }, [['$.apps[0].name', /is required/]]],
  [
    'bad branding',
    {
      apps: [
        {
          ...validApp,
          branding: { primaryColor: 'blue', accentColor: '#12345', theme: [], logo: 'x' },
        },
      ],
    },
    [
      ['$.apps[0].branding.primaryColor', /must match/],
      ['$.apps[0].branding.accentColor', /must match/],
      ['$.apps[0].branding.theme', /must be object/],
      ['$.apps[0].branding.logo', /not a known field/],
    ],
  ],
  [
    'unknown zone',
    { apps: [{ ...validApp, menus: { header: [] } }] },
    [['$.apps[0].menus.header', /not a known field/]],
  ],
  [
    'bad items',
    {
      apps: [
        {
          ...validApp,
          menus: {
            'user-menu': [
              { id: 'A', label: 'x' },
              { id: 'b', kind: 'button', label: 'y', external: 'yes', roles: ['r', 'r'] },
              { label: 'no id' },
            ],
          },
        },
      ],
    },
    [
      ['$.apps[0].menus["user-menu"][0].id', /must match/],
      ['$.apps[0].menus["user-menu"][1].kind', /must be one of link, search, action/],
      ['$.apps[0].menus["user-menu"][1].external', /must be boolean/],
      ['$.apps[0].menus["user-menu"][1].roles', /duplicate items/],
      ['$.apps[0].menus["user-menu"][2].id', /is required/],
    ],
  ],
  [
    'bad child',
    {
      apps: [
        {
          ...validApp,
          menus: {
            sidebar: [{ id: 'p', label: 'P', children: [{ id: 'c', label: 'C', children: {} }] }],
          },
        },
      ],
    },
    [['$.apps[0].menus.sidebar[0].children[0].children', /must be array/]],
  ],
  [
    'duplicate item ids across zones and levels',
    {
      apps: [
        {
          ...validApp,
          menus: {
            sidebar: [{ id: 'a', label: 'A', children: [{ id: 'b', label: 'B' }] }],
            footer: [{ id: 'b', label: 'B again' }],
          },
        },
      ],
    },
    [
      [
        '$.apps[0].menus.footer[0].id',
        /item id "b" is used twice in app "ok" \(first at \$\.apps\[0\]\.menus\.sidebar\[0\]\.children\[0\]\.id\)/,
      ],
    ],
  ],
  [
    'bad language tags',
    {
      apps: [
        {
          ...validApp,
          defaultLocale: 'English',
          menus: {
            sidebar: [
              { id: 'a', label: 'A', labels: { de_CH: 'A', 'fr-CA': '', 'x-klingon': 'Q' } },
            ],
          },
        },
      ],
    },
    [
      ['$.apps[0].defaultLocale', /must match/],
      ['$.apps[0].menus.sidebar[0].labels.de_CH', /is not a language tag/],
      ['$.apps[0].menus.sidebar[0].labels["x-klingon"]', /is not a language tag/],
      ['$.apps[0].menus.sidebar[0].labels["fr-CA"]', /must NOT have fewer than 1 characters/],
    ],
  ],
  [
    'labels a schema cannot refuse',
    {
      apps: [
        {
          ...validApp,
          defaultLocale: 'de-AT',
          menus: {
            sidebar: [
              { id: 'a', label: 'A', labels: { 'de-at': 'A', 'fr-CA': 'A', 'fr-ca': 'A' } },
            ],
          },
        },
      ],
    },
    [
      ['$.apps[0].menus.sidebar[0].labels["de-at"]', /is the app's default locale \(de-AT\)/],
      ['$.apps[0].menus.sidebar[0].labels["fr-ca"]', /names the same language as "fr-CA"/],
    ],
  ],
  [
    'rollouts and windows',
    {
      apps: [
        {
          ...validApp,
          menus: {
            sidebar: [
              { id: 'a', label: 'A', rollout: 101 },
              { id: 'b', label: 'B', rollout: 12.5 },
              { id: 'c', label: 'C', rollout: '25' },
              { id: 'd', label: 'D', visibleFrom: '2026-12-01T00:00:00' },
              { id: 'e', label: 'E', visibleFrom: '2026-02-30T00:00:00Z' },
              {
                id: 'f',
                label: 'F',
                visibleFrom: '2026-12-02T00:00:00Z',
                visibleUntil: '2026-12-01T00:00:00Z',
              },
              {
                id: 'g',
                label: 'G',
                visibleFrom: '2026-12-01T00:00:00Z',
                visibleUntil: '2026-12-01T01:00:00+01:00',
              },
            ],
          },
        },
      ],
    },
    [
      ['$.apps[0].menus.sidebar[0].rollout', /must be a whole percent from 0 to 100/],
      ['$.apps[0].menus.sidebar[1].rollout', /must be a whole percent from 0 to 100/],
      ['$.apps[0].menus.sidebar[2].rollout', /must be a whole percent from 0 to 100/],
      ['$.apps[0].menus.sidebar[3].visibleFrom', /not an RFC 3339 date-time with an offset/],
      ['$.apps[0].menus.sidebar[4].visibleFrom', /not an RFC 3339 date-time with an offset/],
      ['$.apps[0].menus.sidebar[5].visibleUntil', /must be later than visibleFrom/],
      ['$.apps[0].menus.sidebar[6].visibleUntil', /must be later than visibleFrom/],
    ],
  ],
  [
    'links with another scheme, in any case, with spaces and control characters around or in it',
    { apps: appsWithLinks(REFUSED_LINKS) },
    REFUSED_LINKS.flatMap(
      (_, index): Array<[string, RegExp]> => [
        [
          `$.apps[${index}].homeUrl`,
          new RegExp(`homeUrl of app "links-${index}" is ".+": ${LINK_PROBLEM}$`),
        ],
        [
          `$.apps[${index}].branding.logoUrl`,
          new RegExp(`logoUrl of app "links-${index}" is .+: ${LINK_PROBLEM}$`),
        ],
        [
          `$.apps[${index}].branding.faviconUrl`,
          new RegExp(`faviconUrl of app "links-${index}" is .+: ${LINK_PROBLEM}$`),
        ],
        [
          `$.apps[${index}].menus.sidebar[0].href`,
          new RegExp(`href of item "item-${index}" is .+: ${LINK_PROBLEM}$`),
        ],
      ],
    ),
  ],
  [
    'duplicate app keys',
    { apps: [validApp, { ...validApp, name: 'Again' }] },
    [['$.apps[1].key', /app "ok" is defined twice/]],
  ],
  [
    'duplicate item ids next to schema errors',
    {
      apps: [
        {
          ...validApp,
          branding: { primaryColor: 'blue' },
          menus: {
            sidebar: [
              { id: 'a', label: 'A' },
              { id: 'a', label: 'A again', kind: 'button' },
            ],
          },
        },
        { name: 'No key', menus: { topbar: [{ id: 'x' }, { id: 'x' }] } },
      ],
    },
    [
      ['$.apps[0].branding.primaryColor', /must match/],
      ['$.apps[0].menus.sidebar[1].kind', /must be one of/],
      ['$.apps[0].menus.sidebar[1].id', /item id "a" is used twice in app "ok"/],
      ['$.apps[1].key', /is required/],
      ['$.apps[1].menus.topbar[0].label', /is required/],
      ['$.apps[1].menus.topbar[1].label', /is required/],
      ['$.apps[1].menus.topbar[1].id', /item id "x" is used twice in \$\.apps\[1\]/],
    ],
  ],
  [
    "an app key of another file's, in a file with schema errors",
    { apps: [{ key: 'valid', name: '' }] },
    [
      ['$.apps[0].name', /must NOT have fewer than 1 characters/],
      ['$.apps[0].key', /app "valid" is defined twice \(first at .*\$\.apps\[0\]\.key\)/],
    ],
  ],
]

for (const [name, content, expected] of badFiles) {
  t.test(`a bad file (${name}) is rejected whole, naming every problem`, async (t) => {
    const db = await createTestDatabase(t)
    t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
    const before = await dumpRows(db.sql)
    // A valid app in a second file: it must not be written either.
    const valid = await writeDefinitions({ apps: [{ key: 'valid', name: 'Valid' }] })
    const file = await writeDefinitions(content)
    const result = await runCli(db.url, 'import', valid, file)
    t.equal(result.code, 1)
    t.equal(result.stdout, '')
    t.match(result.stderr, /nothing written/)
    for (const [path, message] of expected) {
      const line = result.stderr
        .split('\n')
        .find((candidate) => candidate.startsWith(`${file}: ${path}: `))
      t.ok(line, `reports ${path}`)
      t.match(line ?? '', message)
    }
    t.equal(
      result.stderr.split('\n').filter((line) => line.startsWith(file)).length,
      expected.length,
      'no other problem',
    )
    t.same(await dumpRows(db.sql), before, 'the database is unchanged')
  })
}

t.test('an unreadable file is a problem like any other', async (t) => {
  const db = await createTestDatabase(t)
  const result = await runCli(db.url, 'import', join(dir, 'missing.json'))
  t.equal(result.code, 1)
  t.match(result.stderr, /missing\.json: \$: cannot be read: ENOENT/)
})

t.test('a database without the schema gets a clear message', async (t) => {
  const db = await createTestDatabase(t, { template: 'template0' })
  const result = await runCli(db.url, 'export')
  t.equal(result.code, 1)
  t.match(result.stderr, /run `shell-data migrate` first/)
  const migrated = await runCli(db.url, 'migrate')
  t.equal(migrated.code, 0, migrated.stderr)
  t.match(migrated.stdout, /applied 001_schema\.sql/)
  t.equal((await runCli(db.url, 'migrate')).stdout, 'schema is up to date\n')
})
