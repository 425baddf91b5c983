import t from 'tap'
import { rolloutBucket } from '../../src/snapshot/audience.js'
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

/**
 * Buckets computed outside the code, with coreutils:
 * `printf '%s' 'crm/leads/alice' | sha256sum | cut -c1-8`, then that hex
 * number modulo 100.
 */
const OUTSIDE_VECTORS: readonly [appKey: string, itemKey: string, sub: string, bucket: number][] = [
  ['crm', 'leads', 'alice', 51], // f85786f7
  ['crm', 'leads', 'bob', 12], // 27fb11c8
  ['crm', 'reports', 'user-42', 61], // c62e9945
  ['app-0001', 'beta.page', 'Zoë', 48], // c322d614, the sub's UTF-8
  ['crm', 'x', '', 57], // f18afc15
]

t.test('the bucket is the one sha256sum gives', async (t) => {
  for (const [appKey, itemKey, sub, bucket] of OUTSIDE_VECTORS) {
    t.equal(rolloutBucket(appKey, itemKey, sub), bucket, `${appKey}/${itemKey}/${sub}`)
  }
})

/** crm with a sidebar: `home` for everyone, `beta` rolled out to `percent`. */
function rolledOut(percent: number) {
  return buildSnapshot(
    snapshotRows({
      menuItems: [
        itemRow('1', 'home'),
        itemRow('2', 'beta', { position: 1, rolloutPercent: percent }),
      ],
    }),
  )
}
const subs = Array.from({ length: 10_000 }, (_, index) => `user-${index}`)
const seesBeta = (percent: number) => {
  const crm = requireApp(rolledOut(percent), 'crm')
  return new Set(
    subs.filter((sub) => outlineZone(crm.variant(callerWith([], sub), 'en')) === 'home,beta'),
  )
}

t.test('at 25 %, about a quarter of 10,000 callers see the item', async (t) => {
  const seen = seesBeta(25)
  t.ok(seen.size >= 2_350 && seen.size <= 2_650, `${seen.size} of 10,000`)
  for (const sub of subs.slice(0, 200)) {
    t.equal(seen.has(sub), rolloutBucket('crm', 'beta', sub) < 25, sub)
  }
})

t.test(
  'raising the percent keeps everyone who saw the item; 0 shows it to no one, 100 to all',
  async (t) => {
    const quarter = seesBeta(25)
    const half = seesBeta(50)
    t.ok(
      [...quarter].every((sub) => half.has(sub)),
      'every caller of 25 % is in 50 %',
    )
    t.ok(half.size > quarter.size)
    t.equal(seesBeta(0).size, 0)
    t.equal(seesBeta(100).size, subs.length)
  },
)

t.test(
  'the same caller gets the same bytes from another build, as on another instance',
  async (t) => {
    const [first, second] = [rolledOut(25), rolledOut(25)].map((snapshot) =>
      requireApp(snapshot, 'crm'),
    )
    for (const sub of subs.slice(0, 100)) {
      const a = first?.variant(callerWith([], sub), 'en')
      const b = second?.variant(callerWith([], sub), 'en')
      t.equal(a?.tag, b?.tag, sub)
    }
  },
)

t.test(
  'callers with the same bytes share a variant and its tag; an app without rollouts shares by roles',
  async (t) => {
    const crm = requireApp(rolledOut(50), 'crm')
    const [inside, outside] = ['user-1', 'user-2', 'user-3', 'user-4', 'user-5', 'user-6']
      .map((sub) => callerWith([], sub))
      .reduce<[ReturnType<typeof callerWith>[], ReturnType<typeof callerWith>[]]>(
        (groups, caller) => {
          groups[rolloutBucket('crm', 'beta', caller.sub) < 50 ? 0 : 1].push(caller)
          return groups
        },
        [[], []],
      )
    t.ok(inside.length >= 2 && outside.length >= 1, 'both sides of the rollout (fixed subs)')
    const [a, b] = inside
    if (a === undefined || b === undefined) return
    t.equal(crm.variant(a, 'en'), crm.variant(b, 'en'), 'one variant for both')
    t.not(crm.variant(a, 'en').tag, crm.variant(outside[0] ?? a, 'en').tag)

    const plain = requireApp(
      buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] })),
      'crm',
    )
    t.equal(plain.variant(callerWith([], 'x'), 'en'), plain.variant(callerWith([], 'y'), 'en'))
  },
)

t.test('a parent outside its rollout hides its children', async (t) => {
  const snapshot = buildSnapshot(
    snapshotRows({
      menuItems: [
        itemRow('1', 'group', { href: null, rolloutPercent: 0 }),
        itemRow('2', 'child', { parentId: '1' }),
      ],
    }),
  )
  t.equal(outlineZone(requireApp(snapshot, 'crm').variant(callerWith([], 'anyone'), 'en')), '')
})

t.test('a rollout narrows what the roles admit, never widens it', async (t) => {
  const snapshot = buildSnapshot(
    snapshotRows({
      menuItems: [
        itemRow('1', 'home'),
        itemRow('2', 'deals', { position: 1, rolloutPercent: 100 }),
      ],
      grants: grantRows('2', 'crm-sales'),
    }),
  )
  const crm = requireApp(snapshot, 'crm')
  t.equal(outlineZone(crm.variant(callerWith(['crm-sales'], 'a'), 'en')), 'home,deals')
  t.equal(outlineZone(crm.variant(callerWith([], 'a'), 'en')), 'home')
})

const HOUR = 3_600_000
const NOW = Date.UTC(2026, 11, 24, 12)

/** crm at `now`: `home`, `closing` (shown until NOW + 1 h), `opening` (from NOW + 2 h). */
function windowed(now: number) {
  return buildSnapshot(
    snapshotRows({
      menuItems: [
        itemRow('1', 'home'),
        itemRow('2', 'closing', { position: 1, visibleUntil: NOW + HOUR }),
        itemRow('3', 'opening', { position: 2, visibleFrom: NOW + 2 * HOUR }),
      ],
    }),
    { now },
  )
}
const sidebarAt = (snapshot: ReturnType<typeof windowed>) =>
  outlineZone(requireApp(snapshot, 'crm').variant(callerWith([]), 'en'))

t.test(
  'an item is shown from visibleFrom until visibleUntil, and the snapshot knows when next',
  async (t) => {
    t.equal(sidebarAt(windowed(NOW)), 'home,closing')
    t.equal(windowed(NOW).nextChangeAt, NOW + HOUR)
    t.equal(sidebarAt(windowed(NOW + HOUR)), 'home', 'until is exclusive')
    t.equal(windowed(NOW + HOUR).nextChangeAt, NOW + 2 * HOUR)
    t.equal(sidebarAt(windowed(NOW + 2 * HOUR)), 'home,opening', 'from is inclusive')
    t.equal(windowed(NOW + 2 * HOUR).nextChangeAt, null, 'no boundary ahead')
  },
)

t.test('time passing makes the windowed app again, with no rows, and nothing else', async (t) => {
  const rows = snapshotRows({
    apps: [appRow('crm'), appRow('hr')],
    menuItems: [
      itemRow('1', 'closing', { visibleUntil: NOW + HOUR }),
      itemRow('2', 'people', { appKey: 'hr' }),
    ],
  })
  const before = buildSnapshot(rows, { now: NOW })
  const noRows = { apps: [], branding: [], menuItems: [], grants: [], labels: [] }
  t.equal(buildSnapshot(noRows, { previous: before, complete: false, now: NOW + 1 }), before)
  const after = buildSnapshot(noRows, { previous: before, complete: false, now: NOW + HOUR })
  t.not(after.app('crm'), before.app('crm'), "crm's view is made again")
  t.equal(after.app('hr'), before.app('hr'), "hr's stays")
  t.equal(outlineZone(requireApp(after, 'crm').variant(callerWith([]), 'en')), '')
  t.not(
    requireApp(after, 'crm').variant(callerWith([]), 'en').tag,
    requireApp(before, 'crm').variant(callerWith([]), 'en').tag,
  )
  t.equal(after.nextChangeAt, null)
})

t.test('a window years ahead, and one wholly in the past', async (t) => {
  const far = Date.UTC(2040, 0, 1)
  const snapshot = buildSnapshot(
    snapshotRows({
      menuItems: [
        itemRow('1', 'someday', { visibleFrom: far }),
        itemRow('2', 'bygone', {
          position: 1,
          visibleFrom: NOW - 2 * HOUR,
          visibleUntil: NOW - HOUR,
        }),
      ],
    }),
    { now: NOW },
  )
  t.equal(outlineZone(requireApp(snapshot, 'crm').variant(callerWith([]), 'en')), '')
  t.equal(snapshot.nextChangeAt, far, 'beyond what one timer can wait: the feed waits in steps')
})
