import t from 'tap'
import type { LabelRow } from '../../src/db/snapshot-rows.js'
import { parseAcceptLanguage } from '../../src/http/accept-language.js'
import { createNegotiation } from '../../src/http/negotiation.js'
import { truncationsOf } from '../../src/snapshot/locale-lookup.js'
import type { AppView } from '../../src/snapshot/types.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import {
  appRow,
  callerWith,
  grantRows,
  itemRow,
  renderBody,
  requireApp,
  snapshotRows,
} from './rows.js'

/** Languages: negotiation by RFC 4647 lookup, labels per locale with fallbacks, tags per locale. */

function labelRows(menuItemId: string, labels: Record<string, string>): LabelRow[] {
  return Object.entries(labels).map(([locale, label]) => ({ menuItemId, locale, label }))
}

/** crm in en (default), de, de-CH (one item), fr and pt-BR; items 1-3 in the sidebar. */
function crmRows(labels: LabelRow[] = defaultLabels) {
  return snapshotRows({
    menuItems: [
      itemRow('1', 'contacts', { label: 'Contacts' }),
      itemRow('2', 'leads', { label: 'Leads', position: 1 }),
      itemRow('3', 'reports', { label: 'Reports', position: 2 }),
    ],
    grants: grantRows('2', 'crm-sales'),
    labels,
  })
}
const defaultLabels = [
  ...labelRows('1', { de: 'Kontakte', fr: 'Contacts', 'pt-BR': 'Contatos' }),
  ...labelRows('2', { de: 'Interessenten', 'de-CH': 'Leads (CH)', fr: 'Prospects' }),
  ...labelRows('3', { de: 'Berichte' }),
]

const crm = requireApp(buildSnapshot(crmRows()), 'crm')

/** The locale a request's Accept-Language chooses, as the routes choose it: parsed once, looked up. */
const negotiation = createNegotiation()
function localeFor(app: AppView, acceptLanguage: string | undefined): string {
  return app.localeFor(negotiation.languages(acceptLanguage))
}

/** The sidebar labels of a caller with these roles in the locale the header chooses. */
function sidebarIn(acceptLanguage: string | undefined, roles: string[] = ['crm-sales']) {
  const locale = localeFor(crm, acceptLanguage)
  const body = JSON.parse(renderBody(crm.variant(callerWith(roles), locale)))
  return { locale, labels: body.menus.sidebar.map((item: { label: string }) => item.label) }
}

t.test('the app lists its default and every locale of its labels, sorted', async (t) => {
  t.equal(crm.defaultLocale, 'en')
  t.same(crm.locales, ['de', 'de-CH', 'en', 'fr', 'pt-BR'])
})

const NEGOTIATION: [string | undefined, string, string][] = [
  [undefined, 'en', 'no header: the default'],
  ['', 'en', 'an empty header: the default'],
  ['de', 'de', 'an exact match'],
  ['DE', 'de', 'case-insensitive'],
  ['pt-br', 'pt-BR', 'answered as stored'],
  ['de-CH', 'de-CH', 'a region the app has'],
  ['de-AT', 'de', 'a region it has not: truncated to the language'],
  ['de-CH-1996', 'de-CH', 'truncated one subtag at a time'],
  ['de-x-private', 'de', 'a dangling singleton goes with its subtag'],
  ['it, fr;q=0.5', 'fr', 'the first range that matches'],
  ['fr;q=0.5, de;q=0.9', 'de', 'descending q, whatever the header order'],
  ['fr;q=0.5, de;q=0.5', 'fr', 'equal q: header order'],
  ['de;q=0, fr;q=0.1', 'fr', 'q=0: never'],
  ['de;q=0', 'en', 'q=0 alone: the default'],
  ['*', 'en', '*: the default'],
  ['it, *;q=0.5, de;q=0.4', 'en', '* before a match: the default'],
  ['it, es', 'en', 'no match: the default'],
  ['de-CH,de;q=0.9,en;q=0.8', 'de-CH', "a Swiss browser's header"],
  ['fr-CA,fr;q=0.9', 'fr', "a Canadian browser's header"],
  ['  de ;  q=0.7 ,, fr ; Q=0.8 ,', 'fr', 'white space, empty elements, Q'],
  ['de;q=1.0', 'de', 'q=1.0'],
  ['de;q=1.5', 'en', 'q above 1: unparsable, so absent'],
  ['de;q=0.1234', 'en', 'q with four decimals: unparsable'],
  ['de;level=1', 'en', 'an unknown parameter: unparsable'],
  ['de_CH', 'en', 'an underscore: unparsable'],
  ['de-toolongsubtag', 'en', 'a subtag over 8 characters: unparsable'],
  ['fr, de;q=abc', 'en', 'one bad element makes the whole header unparsable'],
  ['ünicode', 'en', 'non-ASCII: unparsable'],
  [`de, ${'x'.repeat(8000)}`, 'en', 'several KB of junk: unparsable'],
  [`${'de;q=0.5,'.repeat(500)}fr`, 'fr', 'a long but valid header'],
]

for (const [header, expected, why] of NEGOTIATION) {
  t.test(
    `Accept-Language ${JSON.stringify(header?.slice(0, 40))}: ${expected} (${why})`,
    async (t) => {
      t.equal(localeFor(crm, header), expected)
      t.equal(localeFor(crm, header), expected, 'the same when asked again (memoized)')
    },
  )
}

t.test('distinct headers past the memo bound still negotiate right', async (t) => {
  for (let i = 0; i < 2_000; i += 1) {
    const header = i % 2 === 0 ? `de-${i.toString(36)}x, fr;q=0.1` : `xx-${i}`
    t.equal(localeFor(crm, header), i % 2 === 0 ? 'de' : 'en')
  }
  t.equal(localeFor(crm, 'de-CH,de;q=0.9'), 'de-CH')
})

t.test('parseAcceptLanguage and truncation, directly', async (t) => {
  t.same(parseAcceptLanguage('de-CH,de;q=0.9,en;q=0.8'), ['de-ch', 'de', 'en'])
  t.same(parseAcceptLanguage('en;q=0.1, *;q=0.5'), ['*', 'en'])
  t.same(parseAcceptLanguage(',,'), [])
  t.equal(parseAcceptLanguage('de;q=0.5;q=0.6'), null)
  t.same(truncationsOf('zh-hant-cn-x-private1'), [
    'zh-hant-cn-x-private1',
    'zh-hant-cn',
    'zh-hant',
    'zh',
  ])
})

t.test(
  'each label in the chosen locale, else a shorter form of it, else the default',
  async (t) => {
    t.same(sidebarIn(undefined).labels, ['Contacts', 'Leads', 'Reports'])
    t.same(sidebarIn('de').labels, ['Kontakte', 'Interessenten', 'Berichte'])
    t.same(sidebarIn('de-CH').labels, ['Kontakte', 'Leads (CH)', 'Berichte'], 'de-CH, then de')
    t.same(sidebarIn('fr').labels, ['Contacts', 'Prospects', 'Reports'], 'fr, then the default')
    t.same(sidebarIn('pt-BR').labels, ['Contatos', 'Leads', 'Reports'])
  },
)

t.test('role filtering holds in every language', async (t) => {
  for (const language of [undefined, 'de', 'de-CH', 'fr']) {
    t.same(sidebarIn(language, []).labels.length, 2, `${language}: leads hidden without the role`)
    t.same(sidebarIn(language, ['crm-sales']).labels.length, 3)
  }
})

t.test('the body names its locale; tags differ exactly where bytes differ', async (t) => {
  const german = crm.variant(callerWith(['crm-sales']), 'de')
  t.equal(JSON.parse(renderBody(german)).locale, 'de')
  t.not(german.tag, crm.variant(callerWith(['crm-sales']), 'en').tag)
  t.equal(
    crm.variant(callerWith(['crm-sales']), localeFor(crm, 'de-AT')),
    german,
    'one variant per locale',
  )
  const rebuilt = requireApp(buildSnapshot(crmRows()), 'crm')
  t.equal(
    rebuilt.variant(callerWith(['crm-sales']), 'de').tag,
    german.tag,
    'the same on every build',
  )
})

t.test('a label changed in one language changes only that language', async (t) => {
  const changed = requireApp(
    buildSnapshot(
      crmRows(
        defaultLabels.map((row) =>
          row.menuItemId === '3' && row.locale === 'de' ? { ...row, label: 'Auswertungen' } : row,
        ),
      ),
    ),
    'crm',
  )
  for (const locale of ['en', 'fr', 'pt-BR'])
    t.equal(
      changed.variant(callerWith([]), locale).tag,
      crm.variant(callerWith([]), locale).tag,
      `${locale} unchanged`,
    )
  t.not(
    changed.variant(callerWith([]), 'de').tag,
    crm.variant(callerWith([]), 'de').tag,
    'de changed',
  )
  t.not(
    changed.variant(callerWith([]), 'de-CH').tag,
    crm.variant(callerWith([]), 'de-CH').tag,
    'de-CH falls back to it',
  )
})

t.test('an app whose default is not en', async (t) => {
  const kiosk = requireApp(
    buildSnapshot(
      snapshotRows({
        apps: [appRow('crm', { defaultLocale: 'de' })],
        menuItems: [itemRow('1', 'home', { label: 'Start' })],
        labels: [...labelRows('1', { en: 'Home', de: 'ignored: de is the default' })],
      }),
    ),
    'crm',
  )
  t.same(kiosk.locales, ['de', 'en'])
  t.equal(localeFor(kiosk, undefined), 'de')
  t.equal(localeFor(kiosk, 'fr'), 'de', 'no match: the default')
  t.equal(localeFor(kiosk, 'en-US'), 'en')
  const label = (locale: string) =>
    JSON.parse(renderBody(kiosk.variant(callerWith([]), locale))).menus.sidebar[0].label
  t.equal(label('de'), 'Start', 'menu_items.label is the default locale label')
  t.equal(label('en'), 'Home')
})

t.test(
  'one language spelled two ways is one locale, spelled the same on every build',
  async (t) => {
    const rows = snapshotRows({
      menuItems: [itemRow('1', 'a'), itemRow('2', 'b', { position: 1 })],
      labels: [...labelRows('1', { 'de-ch': 'A (ch)' }), ...labelRows('2', { 'de-CH': 'B (CH)' })],
    })
    const view = requireApp(buildSnapshot(rows), 'crm')
    t.same(view.locales, ['de-CH', 'en'])
    const reversed = requireApp(
      buildSnapshot({ ...rows, labels: [...rows.labels].reverse() }),
      'crm',
    )
    t.same(reversed.locales, ['de-CH', 'en'])
    const body = JSON.parse(renderBody(view.variant(callerWith([]), localeFor(view, 'de-ch'))))
    t.same(
      body.menus.sidebar.map((item: { label: string }) => item.label),
      ['A (ch)', 'B (CH)'],
    )
  },
)

t.test('an app without labels negotiates nothing: every header gives its default', async (t) => {
  const plain = requireApp(buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'a')] })), 'crm')
  t.same(plain.locales, ['en'])
  for (const header of ['de', '*', 'junk;;', undefined]) t.equal(localeFor(plain, header), 'en')
})

t.test('labels count in the snapshot version, and a reload without changes keeps it', async (t) => {
  const base = buildSnapshot(crmRows())
  t.equal(buildSnapshot(crmRows()).version, base.version)
  t.not(buildSnapshot(crmRows(defaultLabels.slice(1))).version, base.version)
  t.not(
    buildSnapshot({ ...crmRows(), apps: [appRow('crm', { defaultLocale: 'fr' })] }).version,
    base.version,
  )
})
