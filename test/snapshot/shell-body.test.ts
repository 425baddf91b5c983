import t from 'tap'
import type { ShellVariant } from '../../src/snapshot/types.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import {
  appRow,
  brandingRow,
  callerWith,
  grantRows,
  itemRow,
  renderBody,
  requireApp,
  snapshotRows,
} from './rows.js'

function crmVariant(rows: Parameters<typeof snapshotRows>[0], roles: string[] = []): ShellVariant {
  return requireApp(buildSnapshot(snapshotRows(rows)), 'crm').variant(callerWith(roles), 'en')
}

const user = { sub: 'u-1', username: 'ada', name: null, email: null, roles: ['crm-sales'] }

t.test(
  'the body has exactly the documented shape, keys in order, absent values null',
  async (t) => {
    const variant = crmVariant(
      {
        apps: [appRow('crm', { name: 'CRM', description: null, homeUrl: null })],
        branding: [brandingRow('crm', { primaryColor: '#0b5fff', theme: { density: 'compact' } })],
        menuItems: [
          itemRow('1', 'leads', { icon: 'funnel', label: 'Leads' }),
          itemRow('2', 'hot', { parentId: '1', href: null, kind: 'action', label: 'Hot' }),
          itemRow('3', 'docs', { zone: 'footer', href: 'https://docs.example', external: true }),
        ],
        grants: grantRows('1', 'crm-sales'),
      },
      ['crm-sales'],
    )
    // Literals list keys in the documented order, so equal strings prove the order too.
    const expected = {
      app: { key: 'crm', name: 'CRM', description: null, homeUrl: null },
      branding: {
        productName: 'CRM',
        logoUrl: null,
        faviconUrl: null,
        primaryColor: '#0b5fff',
        accentColor: null,
        footerText: null,
        theme: { density: 'compact' },
      },
      user,
      menus: {
        topbar: [],
        sidebar: [
          {
            id: 'leads',
            kind: 'link',
            label: 'Leads',
            icon: 'funnel',
            href: '/leads',
            external: false,
            children: [
              {
                id: 'hot',
                kind: 'action',
                label: 'Hot',
                icon: null,
                href: null,
                external: false,
                children: [],
              },
            ],
          },
        ],
        footer: [
          {
            id: 'docs',
            kind: 'link',
            label: 'docs',
            icon: null,
            href: 'https://docs.example',
            external: true,
            children: [],
          },
        ],
        'user-menu': [],
      },
      locale: 'en',
    }
    const body = renderBody(variant, user)
    t.same(JSON.parse(body), expected)
    t.equal(body, JSON.stringify(expected), 'raw bytes, hence key order, match')
    t.same(Object.keys(JSON.parse(body).menus), ['topbar', 'sidebar', 'footer', 'user-menu'])
  },
)

t.test('head ends at "user": and tail starts at ,"menus": and ends with the locale', async (t) => {
  const variant = crmVariant({ menuItems: [itemRow('1', 'home')] })
  t.ok(variant.head.toString().startsWith('{"app":{"key":"crm",'))
  t.ok(variant.head.toString().endsWith(',"user":'))
  t.ok(variant.tail.toString().startsWith(',"menus":{"topbar":['))
  t.ok(variant.tail.toString().endsWith(']},"locale":"en"}'))
  t.same(JSON.parse(renderBody(variant, user)).user, user, 'the user block splices in')
})

t.test('branding falls back when there is no row', async (t) => {
  const body = JSON.parse(renderBody(crmVariant({ apps: [appRow('crm', { name: 'CRM' })] })))
  t.same(body.branding, {
    productName: 'CRM',
    logoUrl: null,
    faviconUrl: null,
    primaryColor: null,
    accentColor: null,
    footerText: null,
    theme: {},
  })
})

t.test('productName falls back to the app name only when it is null', async (t) => {
  const named = crmVariant({ branding: [brandingRow('crm', { productName: 'Sales Cloud' })] })
  t.equal(JSON.parse(renderBody(named)).branding.productName, 'Sales Cloud')
  const unnamed = crmVariant({
    apps: [appRow('crm', { name: 'CRM' })],
    branding: [brandingRow('crm', { logoUrl: '/logo.svg' })],
  })
  const branding = JSON.parse(renderBody(unnamed)).branding
  t.equal(branding.productName, 'CRM')
  t.equal(branding.logoUrl, '/logo.svg')
})

t.test('theme is served as given, and {} when null', async (t) => {
  const theme = { radius: 4, palette: ['#000000', '#ffffff'], nested: { dark: true } }
  const given = crmVariant({ branding: [brandingRow('crm', { theme })] })
  t.same(JSON.parse(renderBody(given)).branding.theme, theme)
  const nullTheme = crmVariant({ branding: [brandingRow('crm', { theme: null })] })
  t.same(JSON.parse(renderBody(nullTheme)).branding.theme, {})
})

t.test('labels with quotes and unicode survive serialization', async (t) => {
  const label = 'Say "hi" \\ ünïcödé \u2028 😀'
  const variant = crmVariant({ menuItems: [itemRow('1', 'odd', { label })] })
  t.equal(JSON.parse(renderBody(variant)).menus.sidebar[0].label, label)
})

t.test('variants are frozen and the head is shared by every variant of an app', async (t) => {
  const view = requireApp(
    buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'a')], grants: grantRows('1', 'r') })),
    'crm',
  )
  const open = view.variant(callerWith([]), 'en')
  const granted = view.variant(callerWith(['r']), 'en')
  t.ok(Object.isFrozen(open))
  t.equal(open.head, granted.head, 'the same Buffer')
  t.not(open.tail.toString(), granted.tail.toString())
})
