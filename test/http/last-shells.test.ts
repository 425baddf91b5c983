import t from 'tap'
import { createLastShells } from '../../src/http/last-shells.js'
import type { Representation } from '../../src/http/representation.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { collectGarbage, evictCrmView, moreAppsThanViewsRows } from '../helpers/garbage.js'
import { callerWith, itemRow, requireApp, snapshotRows } from '../snapshot/rows.js'

/** A caller's last shell: kept while the caller asks for the same, dropped with the snapshot. */

const snapshot = buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] }))
const crm = requireApp(snapshot, 'crm')

function setUp() {
  let swap: (snapshot: Snapshot) => void = () => undefined
  const lastShells = createLastShells({
    onSwap(listener) {
      swap = listener
      return () => undefined
    },
  })
  let made = 0
  const make = (): Representation => {
    made += 1
    return { body: Buffer.from(`body ${made}`), coding: 'identity', etag: `"tag-${made}"` }
  }
  return { lastShells, make, made: () => made, swap: (next: Snapshot) => swap(next) }
}

t.test('the same caller asking for the same again gets what it was sent last', async (t) => {
  const { lastShells, make, made } = setUp()
  const alice = callerWith(['crm-sales'], 'alice')
  const first = lastShells.representationOf(alice, crm, 'en', 'br', make)
  t.equal(lastShells.representationOf(alice, crm, 'en', 'br', make), first)
  t.equal(made(), 1, 'made once')
  // The same user with a refreshed token is another caller: it is made again (and found
  // in the representation cache, which knows bodies by their tag).
  lastShells.representationOf(callerWith(['crm-sales'], 'alice'), crm, 'en', 'br', make)
  t.equal(made(), 2)
})

t.test('another language, coding or view is made again, and kept instead', async (t) => {
  const { lastShells, make, made } = setUp()
  const alice = callerWith([], 'alice')
  lastShells.representationOf(alice, crm, 'en', 'br', make)
  lastShells.representationOf(alice, crm, 'de', 'br', make)
  lastShells.representationOf(alice, crm, 'de', 'gzip', make)
  const other = requireApp(
    buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home', { label: 'Start' })] })),
    'crm',
  )
  lastShells.representationOf(alice, other, 'de', 'gzip', make)
  t.equal(made(), 4)
  lastShells.representationOf(alice, other, 'de', 'gzip', make)
  t.equal(made(), 4, 'the last one is kept')
  lastShells.representationOf(alice, crm, 'en', 'br', make)
  t.equal(made(), 5, 'only the last one')
  // A view of the same content, made again (by another snapshot, or after the cache let it go).
  const again = requireApp(
    buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] })),
    'crm',
  )
  lastShells.representationOf(alice, again, 'en', 'br', make)
  t.equal(made(), 5, 'the same view, by its key')
})

t.test('a new snapshot drops every last shell', async (t) => {
  const { lastShells, make, made, swap } = setUp()
  const alice = callerWith([], 'alice')
  lastShells.representationOf(alice, crm, 'en', 'identity', make)
  swap(buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] }), { previous: snapshot }))
  lastShells.representationOf(alice, crm, 'en', 'identity', make)
  t.equal(made(), 2)
})

t.test("a view the view cache let go is not kept alive by a caller's last shell", async (t) => {
  const { lastShells, make, made } = setUp()
  const many = buildSnapshot(moreAppsThanViewsRows())
  const alice = callerWith([], 'alice')
  // In a function of its own, so that no variable of the test holds the view.
  const remember = () => {
    const view = requireApp(many, 'crm')
    lastShells.representationOf(alice, view, 'en', 'identity', make)
    return new WeakRef(view)
  }
  const crm = remember()
  await collectGarbage()
  t.ok(crm.deref(), 'alive while the cache holds it')
  evictCrmView(many)
  await collectGarbage()
  t.equal(crm.deref(), undefined, 'gone once the cache let it go')
  // Made again, the view has the same key: the caller's last shell still answers it.
  lastShells.representationOf(alice, requireApp(many, 'crm'), 'en', 'identity', make)
  t.equal(made(), 1)
})
