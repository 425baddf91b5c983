import t from 'tap'
import type { SnapshotRows } from '../../src/db/snapshot-rows.js'
import { createVariantCache } from '../../src/snapshot/variant-cache.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import {
  appRow,
  brandingRow,
  callerWith,
  grantRows,
  itemRow,
  renderBody,
  requireApp,
} from './rows.js'

/** Two apps; `crmLabel` varies the first one's only item, and names crm's revision. */
function fullRows(crmLabel = 'Leads'): SnapshotRows {
  return {
    apps: [
      appRow('crm', { name: 'CRM', revision: crmLabel }),
      appRow('hr', { name: 'HR', revision: '1' }),
    ],
    branding: [brandingRow('hr', { productName: 'People' })],
    menuItems: [
      itemRow('1', 'leads', { appKey: 'crm', label: crmLabel }),
      itemRow('2', 'payroll', { appKey: 'hr' }),
    ],
    grants: [...grantRows('1', 'crm-sales'), ...grantRows('2', 'hr-admin')],
    labels: [],
  }
}

/** What an incremental read returns when only `crm` moved: hr's rows are not read. */
function onlyCrmRows(crmLabel: string): SnapshotRows {
  const rows = fullRows(crmLabel)
  return {
    apps: rows.apps.filter((app) => app.appKey === 'crm'),
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
    complete: false,
  })
  const full = buildSnapshot(fullRows('Pipeline'))
  t.equal(incremental.version, full.version, 'same version')
  t.not(incremental.version, first.version, 'the change moved the version')
  t.equal(incremental.appsInventory.tag, full.appsInventory.tag)
  for (const [appKey, roles] of [
    ['crm', ['crm-sales']],
    ['hr', ['hr-admin']],
    ['hr', []],
  ] as const) {
    const fromIncremental = requireApp(incremental, appKey).variant(callerWith(roles), 'en')
    const fromFull = requireApp(full, appKey).variant(callerWith(roles), 'en')
    t.equal(renderBody(fromIncremental), renderBody(fromFull), `${appKey} ${roles.join()}`)
    t.equal(fromIncremental.tag, fromFull.tag)
  }
  t.match(
    renderBody(requireApp(incremental, 'crm').variant(callerWith(['crm-sales']), 'en')),
    /"label":"Pipeline"/,
  )
})

t.test('unchanged apps are taken over whole, with their memoized variants', async (t) => {
  const first = buildSnapshot(fullRows())
  const warm = requireApp(first, 'hr').variant(callerWith(['hr-admin']), 'en')
  const next = buildSnapshot(onlyCrmRows('Pipeline'), {
    previous: first,
    complete: false,
  })
  t.equal(next.app('hr'), first.app('hr'), 'the same app view')
  t.equal(
    requireApp(next, 'hr').variant(callerWith(['hr-admin']), 'en'),
    warm,
    'the same variant object, not re-rendered',
  )
  t.not(next.app('crm'), first.app('crm'), 'the changed app is rebuilt')
})

t.test('a changed app never serves a variant of its old content', async (t) => {
  const first = buildSnapshot(fullRows('Old'))
  const old = requireApp(first, 'crm').variant(callerWith(['crm-sales']), 'en')
  const next = buildSnapshot(onlyCrmRows('New'), {
    previous: first,
    complete: false,
  })
  const fresh = requireApp(next, 'crm').variant(callerWith(['crm-sales']), 'en')
  t.not(fresh, old)
  t.match(renderBody(fresh), /"label":"New"/)
  t.match(
    renderBody(requireApp(first, 'crm').variant(callerWith(['crm-sales']), 'en')),
    /"label":"Old"/,
    'the old snapshot is untouched',
  )
})

t.test(
  'an incremental build keeps apps it has no rows of, and drops the removed ones',
  async (t) => {
    const first = buildSnapshot(fullRows())
    const kept = buildSnapshot(onlyCrmRows('Leads 2'), { previous: first, complete: false })
    t.equal(kept.app('hr'), first.app('hr'), 'hr taken over without any row of it')
    t.same(kept.appKeys, ['crm', 'hr'])
    const gone = buildSnapshot(onlyCrmRows('Leads 2'), {
      previous: first,
      complete: false,
      removedApps: ['hr'],
    })
    t.equal(gone.app('hr'), undefined)
    t.same(gone.appKeys, ['crm'])
    t.equal(gone.version, buildSnapshot(onlyCrmRows('Leads 2')).version)
  },
)

t.test('an app read again at the revision in service is not built again', async (t) => {
  const first = buildSnapshot(fullRows())
  const again = buildSnapshot(fullRows(), { previous: first, complete: false })
  t.equal(again, first, 'nothing moved: the snapshot in service itself')
})

t.test(
  'a complete read builds every app again, but keeps the views of unchanged content',
  async (t) => {
    const first = buildSnapshot(fullRows())
    const same = buildSnapshot(fullRows(), { previous: first })
    t.equal(same, first, 'the same content: the snapshot in service itself')
    const next = buildSnapshot(fullRows('Pipeline'), { previous: first })
    t.equal(next.app('hr'), first.app('hr'), "hr's view stays")
    t.not(next.app('crm'), first.app('crm'), "crm's is new")
    const without = buildSnapshot(
      { ...fullRows(), apps: [appRow('crm', { name: 'CRM', revision: 'Leads' })] },
      { previous: first },
    )
    t.same(without.appKeys, ['crm'], 'an app a complete read lacks is gone')
  },
)

t.test('the inventory stays the same object while what it lists does not change', async (t) => {
  const first = buildSnapshot(fullRows())
  const next = buildSnapshot(onlyCrmRows('Pipeline'), { previous: first, complete: false })
  t.equal(next.appsInventory, first.appsInventory)
  const renamed = buildSnapshot(
    { ...onlyCrmRows('Pipeline'), apps: [appRow('crm', { name: 'Sales', revision: 'x' })] },
    { previous: next, complete: false },
  )
  t.not(renamed.appsInventory.tag, next.appsInventory.tag)
  t.match(renamed.appsInventory.bytes().toString(), /"name":"Sales"/)
})

t.test("variants of an app's old content leave the cache at once, making room", async (t) => {
  // Room for two variants: hr's, then crm's old one.
  const first = buildSnapshot(fullRows('Old'), {
    variants: createVariantCache({ maxEntries: 2, maxBytes: 1_000_000 }),
  })
  const warm = requireApp(first, 'hr').variant(callerWith(['hr-admin']), 'en')
  requireApp(first, 'crm').variant(callerWith(['crm-sales']), 'en')
  const next = buildSnapshot(onlyCrmRows('New'), {
    previous: first,
    complete: false,
  })
  t.match(
    renderBody(requireApp(next, 'crm').variant(callerWith(['crm-sales']), 'en')),
    /"label":"New"/,
  )
  // Had crm's old variant stayed, the new one would have pushed out hr's, the least recently used.
  t.equal(
    requireApp(next, 'hr').variant(callerWith(['hr-admin']), 'en'),
    warm,
    "hr's variant is still cached",
  )
})
