import t from 'tap'
import { buildSnapshot } from '../../src/snapshot/build.js'
import type { SnapshotRows } from '../../src/snapshot/types.js'
import { appRow, brandingRow, grantRows, itemRow, renderBody, requireApp } from './rows.js'

/** Two apps; `crmLabel` varies the first one's only item. */
function fullRows(crmLabel = 'Leads'): SnapshotRows {
  return {
    apps: [appRow('crm', { name: 'CRM' }), appRow('hr', { name: 'HR' })],
    branding: [brandingRow('hr', { productName: 'People' })],
    menuItems: [
      itemRow('1', 'leads', { appKey: 'crm', label: crmLabel }),
      itemRow('2', 'payroll', { appKey: 'hr' }),
    ],
    grants: [...grantRows('1', 'crm-sales'), ...grantRows('2', 'hr-admin')],
    labels: [],
  }
}

/** What an incremental read returns when only `crm` moved: hr's other rows are not read. */
function onlyCrmRows(crmLabel: string): SnapshotRows {
  const rows = fullRows(crmLabel)
  return {
    apps: rows.apps,
    branding: [],
    menuItems: rows.menuItems.filter((item) => item.appKey === 'crm'),
    grants: rows.grants.filter((grant) => grant.menuItemId === '1'),
    labels: [],
  }
}

t.test('an incremental build equals a full build of the same content', async (t) => {
  const first = buildSnapshot(fullRows())
  const incremental = buildSnapshot(onlyCrmRows('Pipeline'), {
    previous: first,
    unchangedApps: new Set(['hr']),
  })
  const full = buildSnapshot(fullRows('Pipeline'))
  t.equal(incremental.version, full.version, 'same version')
  t.not(incremental.version, first.version, 'the change moved the version')
  t.equal(incremental.appsInventory.etag, full.appsInventory.etag)
  for (const [appKey, roles] of [
    ['crm', ['crm-sales']],
    ['hr', ['hr-admin']],
    ['hr', []],
  ] as const) {
    const fromIncremental = requireApp(incremental, appKey).variant(roles, 'en')
    const fromFull = requireApp(full, appKey).variant(roles, 'en')
    t.equal(renderBody(fromIncremental), renderBody(fromFull), `${appKey} ${roles.join()}`)
    t.equal(fromIncremental.tag, fromFull.tag)
  }
  t.match(
    renderBody(requireApp(incremental, 'crm').variant(['crm-sales'], 'en')),
    /"label":"Pipeline"/,
  )
})

t.test('unchanged apps are taken over whole, with their memoized variants', async (t) => {
  const first = buildSnapshot(fullRows())
  const warm = requireApp(first, 'hr').variant(['hr-admin'], 'en')
  const next = buildSnapshot(onlyCrmRows('Pipeline'), {
    previous: first,
    unchangedApps: new Set(['hr']),
  })
  t.equal(next.app('hr'), first.app('hr'), 'the same app view')
  t.equal(
    requireApp(next, 'hr').variant(['hr-admin'], 'en'),
    warm,
    'the same variant object, not re-rendered',
  )
  t.not(next.app('crm'), first.app('crm'), 'the changed app is rebuilt')
})

t.test('a changed app never serves a variant of its old content', async (t) => {
  const first = buildSnapshot(fullRows('Old'))
  const old = requireApp(first, 'crm').variant(['crm-sales'], 'en')
  const next = buildSnapshot(onlyCrmRows('New'), {
    previous: first,
    unchangedApps: new Set(['hr']),
  })
  const fresh = requireApp(next, 'crm').variant(['crm-sales'], 'en')
  t.not(fresh, old)
  t.match(renderBody(fresh), /"label":"New"/)
  t.match(
    renderBody(requireApp(first, 'crm').variant(['crm-sales'], 'en')),
    /"label":"Old"/,
    'the old snapshot is untouched',
  )
})

t.test(
  'an app marked unchanged needs no rows; an app neither read nor marked is gone',
  async (t) => {
    const first = buildSnapshot(fullRows())
    const rows = onlyCrmRows('Leads')
    const crmOnly = { ...rows, apps: rows.apps.filter((app) => app.appKey === 'crm') }
    const kept = buildSnapshot(crmOnly, { previous: first, unchangedApps: new Set(['hr']) })
    t.equal(kept.app('hr'), first.app('hr'), 'hr taken over without any row of it')
    t.same(kept.appKeys, ['crm', 'hr'])
    const gone = buildSnapshot(crmOnly, { previous: first, unchangedApps: new Set() })
    t.equal(gone.app('hr'), undefined)
    t.same(gone.appKeys, ['crm'])
    t.equal(
      gone.version,
      buildSnapshot({ ...rows, apps: [appRow('crm', { name: 'CRM' })] }).version,
    )
  },
)

t.test('without unchangedApps everything is rebuilt from the rows', async (t) => {
  const first = buildSnapshot(fullRows())
  const next = buildSnapshot(fullRows(), { previous: first })
  t.not(next.app('hr'), first.app('hr'))
  t.equal(next.version, first.version)
})

t.test("variants of an app's old content leave the cache at once, making room", async (t) => {
  // Room for two variants: hr's, then crm's old one.
  const first = buildSnapshot(fullRows('Old'), { variantCacheMaxEntries: 2 })
  const warm = requireApp(first, 'hr').variant(['hr-admin'], 'en')
  requireApp(first, 'crm').variant(['crm-sales'], 'en')
  const next = buildSnapshot(onlyCrmRows('New'), {
    previous: first,
    unchangedApps: new Set(['hr']),
  })
  t.match(renderBody(requireApp(next, 'crm').variant(['crm-sales'], 'en')), /"label":"New"/)
  // Had crm's old variant stayed, the new one would have pushed out hr's, the least recently used.
  t.equal(requireApp(next, 'hr').variant(['hr-admin'], 'en'), warm, "hr's variant is still cached")
})
