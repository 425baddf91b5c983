import t from 'tap'
import { buildVerifiedCaller } from '../../src/auth/verified-caller.js'
import { createLastShellMemo } from '../../src/routes/last-shell-memo.js'
import type { AppView, Caller, ShellVariant, Snapshot } from '../../src/snapshot/types.js'

/** A view that renders a fresh variant per call and counts the calls. */
function countingView(key: string): AppView & { calls: number } {
  const view = {
    key,
    grantedRoles: [],
    defaultLocale: 'en',
    locales: ['de', 'en'],
    localeFor: () => 'en',
    calls: 0,
    variant({ roles }: Caller, locale: string): ShellVariant {
      view.calls += 1
      return {
        head: Buffer.from(`{"app":"${key}","user":`),
        tail: Buffer.from(`,"locale":"${locale}"}`),
        tag: `tag-${key}-${roles.join('+')}${locale === 'en' ? '' : `-${locale}`}`,
      }
    },
  }
  return view
}

const snapshotOf = (version: string) => ({ version }) as unknown as Snapshot
const exp = Math.floor(Date.now() / 1000) + 300
const caller = (sub: string, roles: string[]) =>
  buildVerifiedCaller({ sub, exp, realm_access: { roles } }, [['realm_access', 'roles']])

t.test('a repeat request of the same caller, app and snapshot reuses the last shell', async (t) => {
  const lastShellOf = createLastShellMemo()
  const snapshot = snapshotOf('v1')
  const crm = countingView('crm')
  const alice = caller('alice', ['b', 'a'])
  const first = lastShellOf(snapshot, crm, 'en', alice)
  t.equal(
    first.coded.identity.etag,
    `"tag-crm-a+b.${alice.userTag}"`,
    'variant tag and user tag, quoted',
  )
  t.equal(lastShellOf(snapshot, crm, 'en', alice), first)
  t.equal(crm.calls, 1, 'one variant lookup')

  const bob = caller('bob', ['a', 'b'])
  t.equal(
    lastShellOf(snapshot, crm, 'en', bob).coded.identity.etag,
    `"tag-crm-a+b.${bob.userTag}"`,
    'per caller',
  )
  t.equal(crm.calls, 2)
})

t.test('another app or another snapshot is looked up again', async (t) => {
  const lastShellOf = createLastShellMemo()
  const alice = caller('alice', ['a'])
  const crm = countingView('crm')
  const hr = countingView('hr')
  const v1 = snapshotOf('v1')
  lastShellOf(v1, crm, 'en', alice)
  t.equal(lastShellOf(v1, hr, 'en', alice).coded.identity.etag, `"tag-hr-a.${alice.userTag}"`)
  t.equal(
    lastShellOf(v1, crm, 'en', alice).coded.identity.etag,
    `"tag-crm-a.${alice.userTag}"`,
    'only the last app is kept',
  )
  t.equal(crm.calls, 2)
  // A reload may keep an unchanged app's view; the memo still starts over with the snapshot.
  lastShellOf(snapshotOf('v2'), crm, 'en', alice)
  t.equal(crm.calls, 3)
})

t.test('another locale is looked up again', async (t) => {
  const lastShellOf = createLastShellMemo()
  const snapshot = snapshotOf('v1')
  const crm = countingView('crm')
  const alice = caller('alice', ['a'])
  const english = lastShellOf(snapshot, crm, 'en', alice)
  const german = lastShellOf(snapshot, crm, 'de', alice)
  t.equal(german.coded.identity.etag, `"tag-crm-a-de.${alice.userTag}"`)
  t.equal(crm.calls, 2)
  t.equal(lastShellOf(snapshot, crm, 'de', alice), german, 'the last locale is kept')
  t.not(lastShellOf(snapshot, crm, 'en', alice), english, 'the one before is not')
  t.equal(crm.calls, 3)
})

t.test('a shell keeps its body and codings: a repeat compresses nothing', async (t) => {
  const lastShellOf = createLastShellMemo()
  const snapshot = snapshotOf('v1')
  const crm = countingView('crm')
  const alice = caller('alice', ['a'])
  const shell = lastShellOf(snapshot, crm, 'en', alice)
  t.equal(lastShellOf(snapshot, crm, 'en', alice).coded, shell.coded, 'one body, kept')
  t.equal(shell.coded.in('br'), shell.coded.in('br'), 'a coding is made once, then kept')
})
