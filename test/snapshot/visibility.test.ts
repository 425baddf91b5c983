import t from 'tap'
import type { AppView } from '../../src/snapshot/types.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import {
  appRow,
  callerWith,
  grantRows,
  itemRow,
  outlineZone,
  requireApp,
  snapshotRows,
} from './rows.js'

function crmView(rows: Parameters<typeof snapshotRows>[0]): AppView {
  return requireApp(buildSnapshot(snapshotRows(rows)), 'crm')
}

t.test('an item with grants is shown to a caller holding any one of them', async (t) => {
  const view = crmView({
    menuItems: [itemRow('1', 'reports')],
    grants: grantRows('1', 'crm-admin', 'crm-manager'),
  })
  t.equal(outlineZone(view.variant(callerWith([]), 'en')), '')
  t.equal(outlineZone(view.variant(callerWith(['crm-sales']), 'en')), '')
  t.equal(outlineZone(view.variant(callerWith(['crm-manager']), 'en')), 'reports')
  t.equal(outlineZone(view.variant(callerWith(['crm-admin']), 'en')), 'reports')
  t.equal(outlineZone(view.variant(callerWith(['crm-admin', 'crm-manager']), 'en')), 'reports')
})

t.test('an item without grants is shown to every caller', async (t) => {
  const view = crmView({ menuItems: [itemRow('1', 'dashboard')] })
  t.equal(outlineZone(view.variant(callerWith([]), 'en')), 'dashboard')
  t.equal(outlineZone(view.variant(callerWith(['anything']), 'en')), 'dashboard')
})

t.test('a hidden parent hides its children, even ungranted ones', async (t) => {
  const view = crmView({
    menuItems: [
      itemRow('1', 'admin'),
      itemRow('2', 'users', { parentId: '1' }),
      itemRow('3', 'audit', { parentId: '1' }),
    ],
    grants: [...grantRows('1', 'crm-admin'), ...grantRows('3', 'crm-auditor')],
  })
  t.equal(outlineZone(view.variant(callerWith(['crm-auditor']), 'en')), '')
  t.equal(outlineZone(view.variant(callerWith(['crm-admin']), 'en')), 'admin(users)')
  t.equal(
    outlineZone(view.variant(callerWith(['crm-admin', 'crm-auditor']), 'en')),
    'admin(users,audit)',
  )
})

t.test('an href-less grouping is dropped when none of its children is shown', async (t) => {
  const view = crmView({
    menuItems: [
      itemRow('1', 'sales', { href: null }),
      itemRow('2', 'leads', { parentId: '1' }),
      itemRow('3', 'deals', { parentId: '1' }),
      itemRow('4', 'search', { href: null, kind: 'search' }),
      itemRow('5', 'tools', { href: null }),
      itemRow('6', 'overview', { parentId: '5', href: null }),
    ],
    grants: [...grantRows('2', 'crm-sales'), ...grantRows('3', 'crm-sales')],
  })
  t.equal(
    outlineZone(view.variant(callerWith([]), 'en')),
    'search,tools(overview)',
    'sales has no visible child',
  )
  t.equal(
    outlineZone(view.variant(callerWith(['crm-sales']), 'en')),
    'sales(leads,deals),search,tools(overview)',
  )
  t.equal(
    outlineZone(
      crmView({ menuItems: [itemRow('1', 'search', { href: null })] }).variant(
        callerWith([]),
        'en',
      ),
    ),
    'search',
    'an href-less item without children in the data stays',
  )
})

t.test('a grouping whose only children are emptied groupings is dropped too', async (t) => {
  const view = crmView({
    menuItems: [
      itemRow('1', 'top', { href: null }),
      itemRow('2', 'middle', { parentId: '1', href: null }),
      itemRow('3', 'leaf', { parentId: '2' }),
      itemRow('4', 'linked', { position: 1 }),
      itemRow('5', 'child', { parentId: '4' }),
    ],
    grants: [...grantRows('3', 'crm-sales'), ...grantRows('5', 'crm-sales')],
  })
  t.equal(
    outlineZone(view.variant(callerWith([]), 'en')),
    'linked',
    'a parent with an href stays without children',
  )
  t.equal(
    outlineZone(view.variant(callerWith(['crm-sales']), 'en')),
    'top(middle(leaf)),linked(child)',
  )
})

t.test('items are ordered by position, then numeric id, at every level', async (t) => {
  const view = crmView({
    menuItems: [
      itemRow('10', 'ten'),
      itemRow('9', 'nine'),
      itemRow('100', 'first', { position: -1 }),
      itemRow('2', 'last', { position: 5 }),
      itemRow('11', 'c10', { parentId: '9' }),
      itemRow('99', 'c-late', { parentId: '9', position: 3 }),
      itemRow('3', 'c3', { parentId: '9' }),
      itemRow('12', 'gc12', { parentId: '3' }),
      itemRow('8', 'gc8', { parentId: '3' }),
    ],
  })
  t.equal(
    outlineZone(view.variant(callerWith([]), 'en')),
    'first,nine(c3(gc8,gc12),c10,c-late),ten,last',
  )
})

t.test('items land in their own zone, and every zone is present', async (t) => {
  const view = crmView({
    menuItems: [
      itemRow('1', 'search', { zone: 'topbar', kind: 'search', href: null }),
      itemRow('2', 'docs', { zone: 'footer', external: true, href: 'https://docs.example' }),
      itemRow('3', 'logout', { zone: 'user-menu', kind: 'action', href: null }),
    ],
  })
  const variant = view.variant(callerWith([]), 'en')
  t.equal(outlineZone(variant, 'topbar'), 'search')
  t.equal(outlineZone(variant, 'sidebar'), '')
  t.equal(outlineZone(variant, 'footer'), 'docs')
  t.equal(outlineZone(variant, 'user-menu'), 'logout')
})

t.test('orphans, foreign rows and a parent cycle are left out without failing', async (t) => {
  const snapshot = buildSnapshot(
    snapshotRows({
      apps: [appRow('crm')],
      menuItems: [
        itemRow('1', 'home'),
        itemRow('2', 'orphan', { parentId: '404' }),
        itemRow('3', 'loop-a', { parentId: '4' }),
        itemRow('4', 'loop-b', { parentId: '3' }),
        itemRow('5', 'self', { parentId: '5' }),
        itemRow('6', 'under-loop', { parentId: '3' }),
        itemRow('7', 'other-zone-child', { parentId: '1', zone: 'footer' }),
        itemRow('8', 'ghost', { appKey: 'ghost' }),
      ],
      grants: [...grantRows('404', 'nobody'), ...grantRows('3', 'loop-role')],
    }),
  )
  const view = requireApp(snapshot, 'crm')
  t.equal(snapshot.appKeys.length, 1)
  t.equal(snapshot.app('ghost'), undefined, 'items of an unknown app make no app')
  t.equal(outlineZone(view.variant(callerWith(['loop-role']), 'en')), 'home')
  t.same(snapshot.grantedRoles('crm'), [], 'grants of unreachable items do not count')
})
