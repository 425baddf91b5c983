import { readFileSync } from 'node:fs'
import t from 'tap'
import { planAppChange } from '../../src/definitions/plan-app-change.js'
import type {
  AppDefinition,
  BrandingDefinition,
  ItemDefinition,
} from '../../src/definitions/types.js'
import { parseDefinitions } from '../../src/definitions/validate-definitions.js'
import { mapZones } from '../../src/domain/vocabulary.js'

/** An app as the import reads it from a file: normalized, defaults filled in. */
function defineApp(raw: object): AppDefinition {
  const result = parseDefinitions(JSON.stringify({ apps: [{ key: 'crm', ...raw }] }), 'test.json')
  if (!result.ok) throw new Error(JSON.stringify(result.problems))
  const [app] = result.apps
  if (app === undefined) throw new Error('no app')
  return app
}

function diff(before: object, after: object): readonly string[] {
  return planAppChange(defineApp(before), defineApp(after)).differences
}

const seedText = readFileSync('seeds/crm.json', 'utf8')
const seed = JSON.parse(seedText).apps[0]

t.test(
  'an app as it is stored is unchanged, whatever order its maps were written in',
  async (t) => {
    const app = defineApp(seed)
    t.same(planAppChange(app, structuredClone(app)), {
      key: 'crm',
      action: 'unchanged',
      differences: [],
    })
    // jsonb stores theme keys in its own order; the import keeps labels sorted.
    const reordered = structuredClone(seed)
    reordered.branding.theme = { radius: '6px', density: 'comfortable' }
    t.equal(planAppChange(app, defineApp(reordered)).action, 'unchanged')
  },
)

t.test('a new app is a create that lists its fields, its branding and every item', async (t) => {
  const plan = planAppChange(
    null,
    defineApp({
      name: 'CRM',
      homeUrl: '/crm',
      branding: { primaryColor: '#0b5fff', theme: { radius: '6px' } },
      menus: {
        sidebar: [{ id: 'reports', label: 'Reports', children: [{ id: 'sales', label: 'Sales' }] }],
        footer: [{ id: 'docs', label: 'Docs', href: 'https://d', external: true, roles: ['a'] }],
      },
    }),
  )
  t.equal(plan.action, 'create')
  t.same(plan.differences, [
    '+ app: name "CRM", description (none), homeUrl "/crm", defaultLocale en',
    '+ branding: primaryColor "#0b5fff", theme {"radius":"6px"}',
    '+ item reports (sidebar, top level, position 0): label "Reports", roles (everyone)',
    '+ item sales (sidebar, under reports, position 0): label "Sales", roles (everyone)',
    '+ item docs (footer, top level, position 0): label "Docs", href "https://d", external true, roles ["a"]',
  ])
  t.same(planAppChange(null, defineApp({ name: 'Bare', branding: {} })).differences, [
    '+ app: name "Bare", description (none), homeUrl (none), defaultLocale en',
    '+ branding',
  ])
})

t.test('app fields, old → new, text quoted', async (t) => {
  t.same(
    diff(
      { name: 'CRM', description: null, homeUrl: '/crm' },
      { name: 'Acme "CRM"', description: 'Sales,\nand more', homeUrl: null, defaultLocale: 'de' },
    ),
    [
      '~ app: name "CRM" → "Acme \\"CRM\\""',
      '~ app: description (none) → "Sales,\\nand more"',
      '~ app: homeUrl "/crm" → (none)',
      '~ app: defaultLocale en → de',
    ],
  )
})

t.test('branding added, removed, and changed field by field, theme key by key', async (t) => {
  const branding = { productName: 'Acme', primaryColor: '#0b5fff', theme: { radius: '6px' } }
  t.same(diff({ name: 'CRM' }, { name: 'CRM', branding }), [
    '+ branding: productName "Acme", primaryColor "#0b5fff", theme {"radius":"6px"}',
  ])
  t.same(diff({ name: 'CRM', branding }, { name: 'CRM' }), [
    '- branding: productName "Acme", primaryColor "#0b5fff", theme {"radius":"6px"}',
  ])
  t.same(
    diff(
      { name: 'CRM', branding },
      {
        name: 'CRM',
        branding: {
          primaryColor: '#ff0000',
          footerText: 'Internal',
          theme: { dark: { b: 1, a: null }, density: 'compact' },
        },
      },
    ),
    [
      '~ branding: productName "Acme" → (none)',
      '~ branding: primaryColor "#0b5fff" → "#ff0000"',
      '~ branding: footerText (none) → "Internal"',
      '~ branding: theme.dark (none) → {"a":null,"b":1}',
      '~ branding: theme.density (none) → "compact"',
      '~ branding: theme.radius "6px" → (none)',
    ],
  )
  t.same(
    diff(
      { name: 'CRM', branding: { theme: { 'font-size': 1, nothing: null } } },
      { name: 'CRM', branding: { theme: { 'font-size': 2 } } },
    ),
    ['~ branding: theme["font-size"] 1 → 2', '~ branding: theme.nothing null → (none)'],
    'a key set to null is not a key left out',
  )
})

const leads = {
  id: 'leads',
  label: 'Leads',
  labels: { de: 'Interessenten', fr: 'Prospects' },
  icon: 'funnel',
  href: '/crm/leads',
  roles: ['crm-sales'],
}

t.test("each field of an item, old → new, one line per field, naming the item's id", async (t) => {
  const before = { name: 'CRM', menus: { sidebar: [leads] } }
  const changed = {
    ...leads,
    kind: 'action',
    label: 'Prospects',
    labels: { de: 'Leads', it: 'Contatti' },
    icon: null,
    href: 'https://leads.example.com',
    external: true,
    roles: ['crm-sales', 'crm-admin'],
  }
  t.same(diff(before, { name: 'CRM', menus: { sidebar: [changed] } }), [
    '~ item leads: kind link → action',
    '~ item leads: label "Leads" → "Prospects"',
    '~ item leads: icon "funnel" → (none)',
    '~ item leads: href "/crm/leads" → "https://leads.example.com"',
    '~ item leads: external false → true',
    '~ item leads: roles ["crm-sales"] → ["crm-admin", "crm-sales"]',
    '~ item leads: labels de "Interessenten" → "Leads", fr "Prospects" → (none), it (none) → "Contatti"',
  ])
  t.same(
    diff(before, { name: 'CRM', menus: { sidebar: [{ ...leads, roles: [] }] } }),
    ['~ item leads: roles ["crm-sales"] → (everyone)'],
    'no role is spelled out: everyone sees it',
  )
})

t.test('items added and removed, with their place, children listed each', async (t) => {
  const before = {
    name: 'CRM',
    menus: {
      sidebar: [
        { id: 'dashboard', label: 'Dashboard' },
        { id: 'legacy', label: 'Legacy', children: [{ id: 'old', label: 'Old' }] },
      ],
    },
  }
  const after = {
    name: 'CRM',
    menus: {
      sidebar: [
        {
          id: 'analytics',
          label: 'Analytics',
          children: [{ id: 'reports', label: 'Reports', roles: ['crm-manager'] }],
        },
        { id: 'dashboard', label: 'Dashboard' },
      ],
      topbar: [{ id: 'search', kind: 'search', label: 'Search', labels: { de: 'Suche' } }],
    },
  }
  t.same(diff(before, after), [
    '+ item search (topbar, top level, position 0): kind search, label "Search", roles (everyone), labels de "Suche"',
    '+ item analytics (sidebar, top level, position 0): label "Analytics", roles (everyone)',
    '+ item reports (sidebar, under analytics, position 0): label "Reports", roles ["crm-manager"]',
    '- item legacy (sidebar, top level, position 1): label "Legacy"',
    '- item old (sidebar, under legacy, position 0): label "Old"',
  ])
})

t.test('an item moved to another zone or parent says so', async (t) => {
  const before = {
    name: 'CRM',
    menus: {
      sidebar: [
        { id: 'settings', label: 'Settings' },
        { id: 'admin', label: 'Admin' },
      ],
      footer: [{ id: 'docs', label: 'Docs' }],
    },
  }
  const after = {
    name: 'CRM',
    menus: {
      sidebar: [
        { id: 'settings', label: 'Settings', children: [{ id: 'admin', label: 'Admin' }] },
        { id: 'docs', label: 'Docs' },
      ],
    },
  }
  t.same(diff(before, after), [
    '~ item admin: parent (top level) → settings',
    '~ item admin: position 1 → 0',
    '~ item docs: zone footer → sidebar',
    '~ item docs: position 0 → 1',
  ])
})

function sidebarOf(...ids: string[]): object {
  return { name: 'CRM', menus: { sidebar: ids.map((id) => ({ id, label: id.toUpperCase() })) } }
}

t.test('position: only the items whose order among their kept siblings changed', async (t) => {
  t.same(
    diff(sidebarOf('a', 'b', 'c', 'd'), sidebarOf('d', 'a', 'b', 'c')),
    ['~ item d: position 3 → 0'],
    'one item moved up: that item alone',
  )
  t.same(
    diff(sidebarOf('a', 'b', 'c', 'd'), sidebarOf('b', 'c', 'd', 'a')),
    ['~ item a: position 0 → 3'],
    'one item moved down: that item alone',
  )
  t.same(diff(sidebarOf('a', 'b', 'c'), sidebarOf('a', 'c', 'b')), ['~ item b: position 1 → 2'])
  t.same(
    diff(sidebarOf('a', 'b', 'c'), sidebarOf('new', 'a', 'b', 'c')),
    ['+ item new (sidebar, top level, position 0): label "NEW", roles (everyone)'],
    'an item added above shifts the others, which is not their change',
  )
  t.same(
    diff(sidebarOf('a', 'b', 'c'), sidebarOf('b', 'c')),
    ['- item a (sidebar, top level, position 0): label "A"'],
    'nor is one removed above',
  )
  t.same(
    diff(sidebarOf('a', 'b', 'c'), sidebarOf('c', 'b', 'a')),
    ['~ item c: position 2 → 0', '~ item a: position 0 → 2'],
    'reversed: the middle one, still second, has not moved',
  )
})

/**
 * One value per field, each unlike the base's own. Typed over every field, so
 * a field added to a definition must be added here, and is then tested.
 */
const otherAppValues: { [K in keyof AppDefinition]: AppDefinition[K] } = {
  key: 'crm',
  name: 'Other',
  description: null,
  homeUrl: null,
  defaultLocale: 'it',
  branding: null,
  menus: mapZones(() => []),
}
const otherBrandingValues: { [K in keyof BrandingDefinition]: BrandingDefinition[K] } = {
  productName: 'Other',
  logoUrl: null,
  faviconUrl: null,
  primaryColor: '#000000',
  accentColor: null,
  footerText: null,
  theme: { radius: '0' },
}
const otherItemValues: { [K in keyof ItemDefinition]: ItemDefinition[K] } = {
  id: 'other',
  kind: 'search',
  label: 'Other',
  labels: { de: 'Andere' },
  icon: 'other',
  href: '/other',
  external: true,
  roles: ['other'],
  rollout: 25,
  visibleFrom: '2026-12-01T00:00:00Z',
  visibleUntil: '2027-01-01T00:00:00Z',
  children: [],
}

function fieldsOf<T extends object>(values: T): (keyof T & string)[] {
  return Object.keys(values) as (keyof T & string)[]
}

t.test('a change to any one field of an app, its branding or an item is a change', async (t) => {
  const base = defineApp({
    ...seed,
    menus: { sidebar: [{ ...leads, children: [{ id: 'child', label: 'Child' }] }] },
  })
  const { branding } = base
  const [item] = base.menus.sidebar
  if (item === undefined || branding === null) throw new Error('no item or branding')
  const variants: [string, AppDefinition][] = [
    ...fieldsOf(otherAppValues)
      .filter((field) => field !== 'key')
      .map((field): [string, AppDefinition] => [
        field,
        { ...base, [field]: otherAppValues[field] },
      ]),
    ...fieldsOf(otherBrandingValues).map((field): [string, AppDefinition] => [
      `branding.${field}`,
      { ...base, branding: { ...branding, [field]: otherBrandingValues[field] } },
    ]),
    ...fieldsOf(otherItemValues).map((field): [string, AppDefinition] => [
      `item.${field}`,
      {
        ...base,
        menus: { ...base.menus, sidebar: [{ ...item, [field]: otherItemValues[field] }] },
      },
    ]),
  ]
  for (const [field, variant] of variants) {
    const plan = planAppChange(base, variant)
    t.equal(plan.action, 'change', field)
    t.ok(plan.differences.length > 0, `${field}: a line says what`)
  }
})
