/**
 * Rollouts and windows through real HTTP: the same caller gets the same bytes
 * and ETag from two instances and after a restart; a window opening while
 * streams are open sends an event, within a second, to the callers whose
 * bytes change, and to no one else.
 */
import t from 'tap'
import { rolloutBucket } from '../../src/snapshot/audience.js'
import { type EventStreamClient, openEventStream } from '../helpers/event-stream-client.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { createLogCapture, createSeededDatabase, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const logs = createLogCapture()
const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
// `activities` to a quarter of callers, `reports` (crm-manager, crm-admin) to half.
await db.sql`update shell.menu_items set rollout_percent = 25 where app_key = 'crm' and item_key = 'activities'`
await db.sql`update shell.menu_items set rollout_percent = 50 where app_key = 'crm' and item_key = 'reports'`
const first = await startTestService(t, { logs, db, jwks })
const second = await startTestService(t, { logs, db, jwks })

const callers = await Promise.all(
  Array.from({ length: 60 }, (_, index) =>
    first.token({ sub: `user-${index}`, roles: index % 2 === 0 ? ['crm-manager'] : [] }),
  ),
)

async function shell(url: string, token: string) {
  const response = await httpRequest(url, '/api/v1/shell/crm', bearer(token))
  t.equal(response.status, 200)
  const body = response.json() as { menus: { sidebar: { id: string }[] } }
  return { etag: String(response.headers.etag), sidebar: body.menus.sidebar.map((item) => item.id) }
}

t.test('each caller sees its rollouts, the same bytes and ETag on every instance', async (t) => {
  for (const [index, token] of callers.entries()) {
    const sub = `user-${index}`
    const [a, b] = [await shell(first.url, token), await shell(second.url, token)]
    t.equal(a.etag, b.etag, `${sub}: one ETag`)
    t.equal(a.sidebar.includes('activities'), rolloutBucket('crm', 'activities', sub) < 25)
    const manager = index % 2 === 0
    t.equal(a.sidebar.includes('reports'), manager && rolloutBucket('crm', 'reports', sub) < 50)
  }
})

t.test('after a restart, the same ETags', async (t) => {
  const before = await Promise.all(
    callers.map(async (token) => (await shell(first.url, token)).etag),
  )
  await second.close()
  const restarted = await startTestService(t, { logs, db, jwks })
  const after = await Promise.all(
    callers.map(async (token) => (await shell(restarted.url, token)).etag),
  )
  t.same(after, before)
})

t.test(
  'a window opening while streams are open: an event within a second, where bytes change',
  async (t) => {
    const streams: EventStreamClient[] = []
    t.teardown(() => {
      for (const stream of streams) stream.close()
    })
    const admin = await first.token({ sub: 'ada', roles: ['crm-admin'] })
    const sales = await first.token({ sub: 'sam', roles: ['crm-sales'] })
    const open = async (token: string) => {
      const stream = await openEventStream(first.url, '/api/v1/shell/crm/events', {
        authorization: `Bearer ${token}`,
      })
      streams.push(stream)
      await stream.waitForEvents(1)
      return stream
    }
    // `admin` (crm-admin only) is hidden until the instant: sales never sees it either way.
    const instant = new Date(Date.now() + 2_000)
    await db.sql`update shell.menu_items set visible_from = ${instant} where app_key = 'crm' and item_key = 'admin'`
    await waitFor(
      async () => !(await shell(first.url, admin)).sidebar.includes('admin'),
      'admin hidden',
    )
    const [adminStream, salesStream] = [await open(admin), await open(sales)]
    const adminEvent = await adminStream.waitForEvents(2, 5_000)
    const lateMs = Date.now() - instant.getTime()
    t.ok(lateMs < 1_000, `the event ${lateMs} ms after the instant`)
    t.equal(
      `"${adminEvent.id}"`,
      (await shell(first.url, admin)).etag,
      'with the ETag a GET returns',
    )
    t.ok((await shell(first.url, admin)).sidebar.includes('admin'), 'which shows the item')
    // A change both see, after the window's: sales's next event is that one.
    await db.sql`update shell.menu_items set label = 'Home' where app_key = 'crm' and item_key = 'dashboard'`
    const salesNext = await salesStream.waitForEvents(2)
    t.equal(`"${salesNext.id}"`, (await shell(first.url, sales)).etag)
    t.equal(salesStream.events.length, 2, 'the window sent nothing to a caller whose bytes stayed')
  },
)
