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

t.test('a new token of the same user finds the body and its codings made already', async (t) => {
  const lastShellOf = createLastShellMemo()
  const snapshot = snapshotOf('v1')
  const crm = countingView('crm')
  const first = lastShellOf(snapshot, crm, 'en', caller('alice', ['a']))
  const refreshed = lastShellOf(snapshot, crm, 'en', caller('alice', ['a']))
  t.not(refreshed, first, 'another caller: its own last shell')
  t.equal(refreshed.coded, first.coded, 'the same body, joined once')
  t.not(lastShellOf(snapshot, crm, 'en', caller('bob', ['a'])).coded, first.coded, 'another user')
  t.not(
    lastShellOf(snapshot, crm, 'en', caller('alice', ['a', 'b'])).coded,
    first.coded,
    'the same user with other roles',
  )
  // A reload that kept the app's variant keeps its bodies too.
  t.equal(lastShellOf(snapshotOf('v2'), crm, 'en', caller('alice', ['a'])).coded, first.coded)
})

t.test('bodies are bounded by the bytes they hold, codings included', async (t) => {
  const bulky = countingView('crm')
  const variant = bulky.variant
  // 3,000 bytes of text: long enough to be compressed.
  bulky.variant = (callerOf, locale) => ({
    ...variant(callerOf, locale),
    tail: Buffer.from(`,"pad":"${'menu item '.repeat(300)}"}`),
  })
  const snapshot = snapshotOf('v1')
  const first = caller('alice', ['a'])
  const second = caller('bob', ['a'])
  const identityBytes = bodyOf(snapshot, bulky, first).bytes
  t.ok(identityBytes > 3_000)

  // Room for two bodies as they are, not a byte more (each is charged 512 bytes besides).
  const lastShellOf = createLastShellMemo(2 * (identityBytes + 512))
  const a = lastShellOf(snapshot, bulky, 'en', first).coded
  const b = lastShellOf(snapshot, bulky, 'en', second).coded
  const again = (who: typeof first) =>
    lastShellOf(snapshot, bulky, 'en', caller(who.sub, ['a'])).coded
  t.equal(again(first), a, 'both fit as they are')
  t.equal(again(second), b)
  a.in('br')
  t.ok(a.bytes > identityBytes, 'the coding is counted')
  t.equal(again(first), a, 'the body that grew is the most recent')
  t.not(again(second), b, 'the other one made room')
})

function bodyOf(snapshot: Snapshot, view: AppView, who: ReturnType<typeof caller>) {
  return createLastShellMemo()(snapshot, view, 'en', who).coded
}
