import t from 'tap'
import { MAX_VIEWS } from '../../src/snapshot/app-views.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { openEventStream } from '../helpers/event-stream-client.js'
import { collectGarbage, evictCrmView } from '../helpers/garbage.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/**
 * An open event stream keeps no app view alive, through the HTTP route as through the streams
 * themselves: a view the bounded view cache let go is collected, whatever streams are open on it.
 */

const logs = createLogCapture()
const { url, token, db, service } = await startTestService(t, { logs })

t.test('a view the cache let go is not kept by an open stream on its app', async (t) => {
  await db.sql`
    insert into shell.apps (app_key, name)
    select 'other-' || n, 'Other' from generate_series(0, ${MAX_VIEWS - 1}) as n`
  const current = () => service.feed.current() as Snapshot
  await waitFor(() => current().appKeys.length === MAX_VIEWS + 1, 'every app loaded')
  const sales = await token({ sub: 'sam', roles: ['crm-sales'] })
  const stream = await openEventStream(url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${sales}`,
  })
  t.teardown(() => stream.close())
  await stream.waitForEvents(1)
  // In a function of its own, so that no variable of the test holds the view.
  const crm = (() => new WeakRef(current().app('crm') as object))()
  await collectGarbage()
  t.ok(crm.deref(), 'alive while the cache holds it')
  evictCrmView(current())
  await collectGarbage()
  t.equal(crm.deref(), undefined, 'gone once the cache let it go, the stream still open')
  t.notOk(stream.hasEnded())
})
