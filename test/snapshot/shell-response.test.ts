import t from 'tap'
import { buildShellResponse } from '../../src/snapshot/shell-response.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { callerWith, grantRows, itemRow, requireApp, snapshotRows } from './rows.js'

/** The one place a shell response is made: a view, a caller and a locale to bytes and a tag. */

const crm = requireApp(
  buildSnapshot(
    snapshotRows({
      menuItems: [itemRow('1', 'home'), itemRow('2', 'leads', { label: 'Leads' })],
      grants: grantRows('2', 'crm-sales'),
    }),
  ),
  'crm',
)

t.test('the body is the variant with the caller between its head and tail', async (t) => {
  const caller = callerWith(['crm-sales'])
  const response = buildShellResponse(crm, caller, 'en')
  const bytes = response.bytes()
  t.equal(response.byteLength, bytes.length)
  const body = JSON.parse(bytes.toString('utf8'))
  t.same(Object.keys(body), ['app', 'branding', 'user', 'menus', 'locale'])
  t.same(body.user, JSON.parse(caller.userBlock.toString('utf8')))
  t.same(
    body.menus.sidebar.map((item: { id: string }) => item.id),
    ['home', 'leads'],
  )
  const variant = crm.variant(caller, 'en')
  t.equal(response.tag, `${variant.tag}.${caller.userTag}`, 'the variant tag and the user tag')
})

t.test('the tag follows the bytes: the same bytes, the same tag, whoever asks', async (t) => {
  const first = buildShellResponse(crm, callerWith(['crm-sales'], 'alice'), 'en')
  const refreshed = buildShellResponse(crm, callerWith(['crm-sales'], 'alice'), 'en')
  t.equal(refreshed.tag, first.tag, 'a new token of the same user')
  t.ok(refreshed.bytes().equals(first.bytes()))
  t.not(buildShellResponse(crm, callerWith(['crm-sales'], 'bob'), 'en').tag, first.tag)
  const withoutLeads = buildShellResponse(crm, callerWith([], 'alice'), 'en')
  t.not(withoutLeads.tag, first.tag, 'other roles, other menus')
  t.notOk(withoutLeads.bytes().equals(first.bytes()))
})
