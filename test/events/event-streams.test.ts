import { pino } from 'pino'
import t from 'tap'
import { createEventStreams } from '../../src/events/event-streams.js'
import { createMetrics } from '../../src/metrics.js'
import { buildCaller } from '../../src/snapshot/caller.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { collectGarbage, evictCrmView, moreAppsThanViewsRows } from '../helpers/garbage.js'
import { readMetric } from '../helpers/metrics.js'
import { waitFor } from '../helpers/wait.js'
import { appRow, itemRow, requireApp, snapshotRows } from '../snapshot/rows.js'

t.test(
  'a stream whose client does not read is ended past its bound, counted and logged',
  async (t) => {
    const rows = (label: string) => snapshotRows({ menuItems: [itemRow('1', 'home', { label })] })
    let snapshot = buildSnapshot(rows('Home'))
    let swapped: (snapshot: Snapshot) => void = () => undefined
    const metrics = createMetrics({ defaultMetrics: false })
    const lines: string[] = []
    const streams = createEventStreams({
      snapshots: {
        current: () => snapshot,
        onSwap(listener) {
          swapped = listener
          return () => undefined
        },
      },
      metrics,
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }),
      max: 10,
    })
    t.teardown(() => streams.close())
    const caller = buildCaller({
      sub: 'slow',
      username: null,
      name: null,
      email: null,
      roles: [],
      expiresAtMs: Date.now() + 300_000,
    })
    const view = snapshot.app('crm')
    if (view === undefined) throw new Error('no crm app')
    const body = streams.open({
      view,
      caller,
      languages: [],
      coding: 'identity',
      lastEventId: undefined,
    })
    // Nothing reads the body: as a reply does once the client stops reading, with a backlog.
    body.push(Buffer.alloc(100 * 1024))
    snapshot = buildSnapshot(rows('Start'), { previous: snapshot })
    swapped(snapshot)
    await waitFor(() => body.destroyed, 'the stream dropped')
    t.equal(await readMetric(metrics.eventStreamsEnded, { reason: 'overflow' }), 1)
    t.equal(await readMetric(metrics.eventStreams), 0, 'no longer counted as open')
    t.ok(lines.some((line) => line.includes('the client does not read')))
  },
)

t.test(
  'a stream keeps no view the view cache let go, and follows its app by its key',
  async (t) => {
    let snapshot = buildSnapshot(moreAppsThanViewsRows())
    let swapped: (snapshot: Snapshot) => void = () => undefined
    const metrics = createMetrics({ defaultMetrics: false })
    const streams = createEventStreams({
      snapshots: {
        current: () => snapshot,
        onSwap(listener) {
          swapped = listener
          return () => undefined
        },
      },
      metrics,
      logger: pino({ level: 'silent' }),
      max: 10,
    })
    t.teardown(() => streams.close())
    const caller = buildCaller({
      sub: 'alice',
      username: null,
      name: null,
      email: null,
      roles: [],
      expiresAtMs: Date.now() + 300_000,
    })
    const events: string[] = []
    // In a function of its own, so that no variable of the test holds the view.
    const open = () => {
      const view = requireApp(snapshot, 'crm')
      const body = streams.open({
        view,
        caller,
        languages: [],
        coding: 'identity',
        lastEventId: undefined,
      })
      body.on('data', (chunk: Buffer) => events.push(chunk.toString()))
      return new WeakRef(view)
    }
    const crm = open()
    await waitFor(() => events.length === 1, 'the first event')
    await collectGarbage()
    t.ok(crm.deref(), 'alive while the cache holds it')
    evictCrmView(snapshot)
    await collectGarbage()
    t.equal(crm.deref(), undefined, 'gone once the cache let it go')

    // Another app changes: crm's key is the same, so its stream is sent nothing.
    const rows = moreAppsThanViewsRows()
    const changeOther = {
      ...rows,
      apps: rows.apps.map((app) => ({ ...app, name: `${app.appKey}!` })),
    }
    changeOther.apps[0] = appRow('crm')
    snapshot = buildSnapshot(changeOther, { previous: snapshot })
    swapped(snapshot)
    // crm changes: its stream is sent the new tag.
    const changeCrm = {
      ...changeOther,
      apps: [appRow('crm', { name: 'CRM' }), ...changeOther.apps.slice(1)],
    }
    snapshot = buildSnapshot(changeCrm, { previous: snapshot })
    swapped(snapshot)
    await waitFor(() => events.length === 2, 'the event of the change')
    t.equal(
      await readMetric(metrics.eventsSent, { event: 'shell' }),
      2,
      'one event per change of crm',
    )
  },
)
