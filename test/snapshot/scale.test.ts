import t from 'tap'
import type { GrantRow, MenuItemRow, SnapshotRows } from '../../src/db/snapshot-rows.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { appRow, brandingRow, callerWith, itemRow, outlineZone, requireApp } from './rows.js'

const APPS = 1_000
const ITEMS_PER_APP = 50
const ROLES_PER_APP = 20

/**
 * Per app: 8 href-less sidebar groups of 4 children each, 10 topbar links.
 * Child c of group g is granted role (g * 4 + c) % 20, every group itself is
 * open, and topbar links are open.
 */
function generateRows(): SnapshotRows {
  const menuItems: MenuItemRow[] = []
  const grants: GrantRow[] = []
  let nextId = 1
  for (let a = 0; a < APPS; a++) {
    const appKey = `app-${String(a).padStart(4, '0')}`
    for (let g = 0; g < 8; g++) {
      const groupId = String(nextId++)
      menuItems.push(itemRow(groupId, `g${g}`, { appKey, position: g, href: null }))
      for (let c = 0; c < 4; c++) {
        const childId = String(nextId++)
        menuItems.push(itemRow(childId, `g${g}.c${c}`, { appKey, parentId: groupId, position: c }))
        grants.push({ menuItemId: childId, role: `${appKey}-role-${(g * 4 + c) % ROLES_PER_APP}` })
      }
    }
    for (let l = 0; l < 10; l++) {
      menuItems.push(itemRow(String(nextId++), `top${l}`, { appKey, zone: 'topbar', position: l }))
    }
  }
  const apps = Array.from({ length: APPS }, (_, a) => appRow(`app-${String(a).padStart(4, '0')}`))
  return {
    apps,
    branding: apps.map((app) => brandingRow(app.appKey)),
    menuItems,
    grants,
    labels: [],
  }
}

t.test('1,000 apps x 50 items x 20 roles build and render correctly', async (t) => {
  const rows = generateRows()
  t.equal(rows.menuItems.length, APPS * ITEMS_PER_APP)

  const started = performance.now()
  const snapshot = buildSnapshot(rows)
  t.comment(`build: ${(performance.now() - started).toFixed(1)} ms`)
  t.equal(snapshot.appKeys.length, APPS)

  const view = requireApp(snapshot, 'app-0123')
  t.equal(snapshot.grantedRoles('app-0123')?.length, ROLES_PER_APP)
  // Role 0 opens g0.c0 and g5.c0; role 5 opens g1.c1 and g6.c1.
  const roles = ['app-0123-role-0', 'app-0123-role-5', 'app-0999-role-1']
  t.equal(
    view.variant(callerWith(roles), 'en'),
    view.variant(callerWith(roles.slice(0, 2)), 'en'),
    'the foreign role does not count',
  )

  const renderStarted = performance.now()
  const variant = view.variant(callerWith(roles), 'en')
  t.comment(`first variant: ${(performance.now() - renderStarted).toFixed(2)} ms`)
  t.equal(outlineZone(variant), 'g0(g0.c0),g1(g1.c1),g5(g5.c0),g6(g6.c1)')
  t.equal(outlineZone(variant, 'topbar'), Array.from({ length: 10 }, (_, l) => `top${l}`).join(','))
  t.equal(
    outlineZone(view.variant(callerWith([]), 'en')),
    '',
    'groups without a visible child are dropped',
  )
  t.equal(view.variant(callerWith(roles), 'en'), variant)
})
