import { pino } from 'pino'
import t from 'tap'
import { createEventStreams } from '../../src/events/event-streams.js'
import { createMetrics } from '../../src/metrics.js'
import { buildSnapshot } from '../../src/snapshot/build.js'
import { buildCaller } from '../../src/snapshot/caller.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { readMetric } from '../helpers/metrics.js'
import { waitFor } from '../helpers/wait.js'
import { itemRow, snapshotRows } from '../snapshot/rows.js'

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
