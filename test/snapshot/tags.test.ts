import t from 'tap'
import type { GrantRow, MenuItemRow, SnapshotRows } from '../../src/db/snapshot-rows.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { createVariantCache } from '../../src/snapshot/variant-cache.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { appRow, brandingRow, callerWith, grantRows, itemRow, requireApp } from './rows.js'

/** Two apps, nested items with distinct positions among siblings, grants, branding. */
function contentRows(): SnapshotRows {
  return {
    apps: [appRow('crm', { name: 'CRM' }), appRow('billing', { description: 'Invoices' })],
    branding: [brandingRow('crm', { productName: 'Sales', theme: { accent: 'blue' } })],
    menuItems: [
      itemRow('1', 'dashboard'),
      itemRow('2', 'sales', { position: 1, href: null }),
      itemRow('3', 'leads', { parentId: '2' }),
      itemRow('4', 'deals', { parentId: '2', position: 1 }),
      itemRow('5', 'reports', { position: 2 }),
      itemRow('6', 'search', { zone: 'topbar', kind: 'search', href: null }),
      itemRow('7', 'invoices', { appKey: 'billing' }),
      itemRow('8', 'refunds', { appKey: 'billing', position: 1 }),
    ],
    grants: [
      ...grantRows('3', 'crm-sales'),
      ...grantRows('4', 'crm-sales', 'crm-manager'),
      ...grantRows('5', 'crm-manager'),
      ...grantRows('8', 'billing-admin'),
    ],
    labels: [],
  }
}

/** Same content: rows reversed, ids renumbered in the opposite order. */
function renumberedRows(rows: SnapshotRows): SnapshotRows {
  const renumber = (id: string) => String(1000n - BigInt(id))
  const menuItems = rows.menuItems.map(
    (item): MenuItemRow => ({
      ...item,
      id: renumber(item.id),
      parentId: item.parentId === null ? null : renumber(item.parentId),
    }),
  )
  const grants = rows.grants.map(
    (grant): GrantRow => ({ ...grant, menuItemId: renumber(grant.menuItemId) }),
  )
  return {
    apps: [...rows.apps].reverse(),
    branding: [...rows.branding].reverse(),
    menuItems: menuItems.reverse(),
    grants: grants.reverse(),
    labels: [...rows.labels].reverse(),
  }
}

const callers: string[][] = [[], ['crm-sales'], ['crm-manager'], ['billing-admin', 'crm-sales']]

function variantTags(snapshot: Snapshot): string[] {
  return ['crm', 'billing'].flatMap((appKey) =>
    callers.map((roles) => requireApp(snapshot, appKey).variant(callerWith(roles), 'en').tag),
  )
}

function withItem(rows: SnapshotRows, itemKey: string, fields: Partial<MenuItemRow>): SnapshotRows {
  return {
    ...rows,
    menuItems: rows.menuItems.map((item) =>
      item.itemKey === itemKey ? { ...item, ...fields } : item,
    ),
  }
}

t.test('tags depend on content alone, not on ids, row order or build', async (t) => {
  const first = buildSnapshot(contentRows(), { loadedAt: new Date(0) })
  const second = buildSnapshot(contentRows())
  const renumbered = buildSnapshot(renumberedRows(contentRows()))
  t.equal(second.version, first.version, 'two builds agree')
  t.equal(renumbered.version, first.version, 'renumbered and reordered rows agree')
  t.same(variantTags(second), variantTags(first))
  t.same(variantTags(renumbered), variantTags(first))
  t.equal(renumbered.appsInventory.tag, first.appsInventory.tag)
  t.equal(
    requireApp(renumbered, 'crm')
      .variant(callerWith(['crm-sales']), 'en')
      .tail.toString(),
    requireApp(first, 'crm')
      .variant(callerWith(['crm-sales']), 'en')
      .tail.toString(),
  )
})

t.test('every change of content changes the version', async (t) => {
  const base = buildSnapshot(contentRows())
  const baseTags = variantTags(base)
  const changes: Array<[string, SnapshotRows]> = [
    ['label', withItem(contentRows(), 'dashboard', { label: 'Home' })],
    ['href', withItem(contentRows(), 'reports', { href: '/reports/v2' })],
    [
      'position swap',
      withItem(withItem(contentRows(), 'leads', { position: 1 }), 'deals', { position: 0 }),
    ],
    ['icon', withItem(contentRows(), 'search', { icon: 'magnifier' })],
    [
      'new grant',
      { ...contentRows(), grants: [...contentRows().grants, ...grantRows('1', 'crm-sales')] },
    ],
    [
      'app name',
      {
        ...contentRows(),
        apps: [appRow('crm', { name: 'CRM 2' }), appRow('billing', { description: 'Invoices' })],
      },
    ],
    [
      'theme',
      {
        ...contentRows(),
        branding: [brandingRow('crm', { productName: 'Sales', theme: { accent: 'red' } })],
      },
    ],
  ]
  for (const [change, rows] of changes) {
    const changed = buildSnapshot(rows)
    t.not(changed.version, base.version, `${change} changes the version`)
    t.notSame(variantTags(changed), baseTags, `${change} changes some variant tag`)
  }
})

t.test('a change nobody can see still changes the version', async (t) => {
  const base = buildSnapshot(contentRows())
  const extraGrant = buildSnapshot({
    ...contentRows(),
    grants: [...contentRows().grants, ...grantRows('4', 'crm-auditor')],
  })
  t.not(extraGrant.version, base.version)
  t.equal(
    requireApp(extraGrant, 'crm').variant(callerWith(['crm-sales']), 'en').tag,
    requireApp(base, 'crm').variant(callerWith(['crm-sales']), 'en').tag,
    'a sales caller sees the same deals item either way',
  )
  const emptyBranding = buildSnapshot({
    ...contentRows(),
    branding: [...contentRows().branding, brandingRow('billing')],
  })
  t.not(emptyBranding.version, base.version, 'a branding row equal to the fallback counts')
})

t.test('with equal positions the id decides the order, and renumbering can flip it', async (t) => {
  const rows = (firstId: string, secondId: string): SnapshotRows => ({
    apps: [appRow('crm')],
    branding: [],
    menuItems: [itemRow(firstId, 'alpha'), itemRow(secondId, 'beta')],
    grants: [],
    labels: [],
  })
  const alphaFirst = buildSnapshot(rows('9', '10'))
  const betaFirst = buildSnapshot(rows('10', '9'))
  t.not(alphaFirst.version, betaFirst.version)
  t.not(
    requireApp(alphaFirst, 'crm').variant(callerWith([]), 'en').tag,
    requireApp(betaFirst, 'crm').variant(callerWith([]), 'en').tag,
  )
})

t.test('callers share a variant when they hold the same roles that the app grants', async (t) => {
  const snapshot = buildSnapshot(contentRows())
  const crm = requireApp(snapshot, 'crm')
  t.same(snapshot.grantedRoles('crm'), ['crm-manager', 'crm-sales'])
  t.equal(
    crm.variant(callerWith([]), 'en'),
    crm.variant(callerWith(['offline_access']), 'en'),
    'no granted role: one variant',
  )
  const sales = crm.variant(callerWith(['crm-sales', 'uma_authorization']), 'en')
  t.equal(
    sales,
    crm.variant(callerWith(['billing-admin', 'crm-sales']), 'en'),
    'irrelevant roles do not count',
  )
  t.not(sales, crm.variant(callerWith([]), 'en'))
  t.equal(
    crm.variant(callerWith(['crm-manager', 'crm-sales']), 'en'),
    crm.variant(callerWith(['crm-manager', 'crm-sales', 'offline_access']), 'en'),
  )
  t.not(crm.variant(callerWith(['crm-manager', 'crm-sales']), 'en'), sales)
  const billing = requireApp(snapshot, 'billing')
  t.equal(
    billing.variant(callerWith(['crm-manager', 'crm-sales']), 'en'),
    billing.variant(callerWith([]), 'en'),
  )
})

t.test('variants cannot confuse role sets when a role contains a comma or is empty', async (t) => {
  const snapshot = buildSnapshot({
    apps: [appRow('crm')],
    branding: [],
    menuItems: [itemRow('1', 'a'), itemRow('2', 'b'), itemRow('3', 'c')],
    grants: [...grantRows('1', 'x,y'), ...grantRows('2', 'x', 'y'), ...grantRows('3', '')],
    labels: [],
  })
  const crm = requireApp(snapshot, 'crm')
  t.not(crm.variant(callerWith(['x,y']), 'en'), crm.variant(callerWith(['x', 'y']), 'en'))
  t.not(
    crm.variant(callerWith(['x,y']), 'en').tail.toString(),
    crm.variant(callerWith(['x', 'y']), 'en').tail.toString(),
  )
  t.not(
    crm.variant(callerWith(['']), 'en').tail.toString(),
    crm.variant(callerWith([]), 'en').tail.toString(),
  )
  t.equal(
    crm.variant(callerWith(['offline_access', 'x']), 'en'),
    crm.variant(callerWith(['x']), 'en'),
    'roles the app grants nowhere make no difference',
  )
})

t.test('variants are memoized per snapshot and bounded', async (t) => {
  const snapshot = buildSnapshot(contentRows())
  const crm = requireApp(snapshot, 'crm')
  t.equal(
    crm.variant(callerWith(['crm-sales']), 'en'),
    crm.variant(callerWith(['crm-sales']), 'en'),
    'the second call hits',
  )
  const other = requireApp(buildSnapshot(contentRows()), 'crm')
  t.not(
    other.variant(callerWith(['crm-sales']), 'en'),
    crm.variant(callerWith(['crm-sales']), 'en'),
    'each snapshot has its cache',
  )
  t.equal(
    other.variant(callerWith(['crm-sales']), 'en').tag,
    crm.variant(callerWith(['crm-sales']), 'en').tag,
  )

  const tiny = requireApp(
    buildSnapshot(contentRows(), {
      variants: createVariantCache({ maxEntries: 1, maxBytes: 1_000_000 }),
    }),
    'crm',
  )
  const evicted = tiny.variant(callerWith([]), 'en')
  tiny.variant(callerWith(['crm-sales']), 'en')
  const rerendered = tiny.variant(callerWith([]), 'en')
  t.not(rerendered, evicted, 'a one-entry cache re-renders after eviction')
  t.equal(rerendered.tag, evicted.tag)
})

t.test('the apps inventory is sorted by key and strongly tagged', async (t) => {
  const snapshot = buildSnapshot({
    ...contentRows(),
    apps: [appRow('crm'), appRow('b-2'), appRow('billing', { homeUrl: null }), appRow('B')],
  })
  const body = JSON.parse(snapshot.appsInventory.bytes().toString())
  t.same(
    body.apps.map((app: { key: string }) => app.key),
    ['B', 'b-2', 'billing', 'crm'],
  )
  t.same(body.apps[2], {
    key: 'billing',
    name: 'App billing',
    description: null,
    homeUrl: null,
    defaultLocale: 'en',
    locales: ['en'],
  })
  t.same(Object.keys(body.apps[0]), [
    'key',
    'name',
    'description',
    'homeUrl',
    'defaultLocale',
    'locales',
  ])
  t.match(snapshot.appsInventory.tag, /^[A-Za-z0-9_-]{20}$/)
  t.equal(snapshot.appKeys.length, 4)
  const empty = buildSnapshot({ apps: [], branding: [], menuItems: [], grants: [], labels: [] })
  t.equal(empty.appsInventory.bytes().toString(), '{"apps":[]}')
  t.equal(empty.appKeys.length, 0)
})

t.test('the snapshot is immutable and keeps its own load time', async (t) => {
  const loadedAt = new Date('2024-01-02T03:04:05Z')
  const snapshot = buildSnapshot(contentRows(), { loadedAt })
  loadedAt.setTime(0)
  t.equal(snapshot.loadedAt.toISOString(), '2024-01-02T03:04:05.000Z')
  t.ok(Object.isFrozen(snapshot))
  t.ok(Object.isFrozen(snapshot.appsInventory))
  const crm = requireApp(snapshot, 'crm')
  t.ok(Object.isFrozen(crm))
  t.throws(() => (snapshot.grantedRoles('crm') as string[]).push('intruder'), TypeError)
  t.equal(snapshot.grantedRoles('crm')?.length, 2)
  t.equal(snapshot.app('unknown'), undefined)
  t.ok(buildSnapshot(contentRows()).loadedAt instanceof Date, 'defaults to now')
})
