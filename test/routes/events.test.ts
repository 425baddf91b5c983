import type { Socket } from 'node:net'
import t from 'tap'
import { type EventStreamClient, openEventStream } from '../helpers/event-stream-client.js'
import { bearer, httpRequest, openConnection } from '../helpers/http-client.js'
import { expectProblem } from '../helpers/problem.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { sleep, waitFor } from '../helpers/wait.js'

/**
 * GET /api/v1/shell/{appKey}/events through real HTTP, read with a real SSE
 * parser: the first event, events only when the caller's ETag moves, bursts,
 * gone, expiry, the limit, shutdown, and the metrics.
 */

const logs = createLogCapture()
const { url, token, db, jwks, service } = await startTestService(t, { logs })
const EVENTS = '/api/v1/shell/crm/events'
const sales = await token({ sub: 'sam', roles: ['crm-sales'] })
const admin = await token({ sub: 'ada', roles: ['crm-admin'] })

const openStreams: EventStreamClient[] = []
t.teardown(() => {
  for (const stream of openStreams) stream.close()
})

async function openStream(
  caller: string,
  headers: Record<string, string> = {},
  path = EVENTS,
): Promise<EventStreamClient> {
  const stream = await openEventStream(url, path, { authorization: `Bearer ${caller}`, ...headers })
  openStreams.push(stream)
  return stream
}

/** The ETag a GET of the shell returns now for this caller and headers. */
async function shellETag(caller: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await httpRequest(url, '/api/v1/shell/crm', bearer(caller, headers))
  t.equal(response.status, 200)
  return String(response.headers.etag)
}

/** An ETag's tag: the id of the event that announces it. */
function tagOf(etag: string): string {
  return etag.replace(/^"|"$/g, '')
}

async function setLabel(itemKey: string, label: string, locale?: string): Promise<void> {
  if (locale === undefined) {
    await db.sql`update shell.menu_items set label = ${label} where app_key = 'crm' and item_key = ${itemKey}`
  } else {
    await db.sql`
      update shell.menu_item_labels set label = ${label}
      where locale = ${locale}
        and menu_item_id = (select id from shell.menu_items where app_key = 'crm' and item_key = ${itemKey})`
  }
}

async function metricValue(sample: string): Promise<number> {
  const text = (await httpRequest(url, '/metrics')).text
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${sample} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

t.test('the first event at once, tagged with the ETag a GET returns', async (t) => {
  const stream = await openStream(sales)
  t.equal(stream.status, 200)
  t.match(stream.headers['content-type'], /^text\/event-stream/)
  t.equal(stream.headers['cache-control'], 'no-cache')
  t.equal(stream.headers['x-accel-buffering'], 'no')
  t.equal(
    stream.headers.vary,
    'Authorization, Accept-Language, Accept-Encoding',
    'varies as the shell does',
  )
  const first = await stream.waitForEvents(1)
  const etag = await shellETag(sales)
  t.equal(first.event, 'shell')
  t.equal(first.id, tagOf(etag))
  t.same(JSON.parse(first.data), { etag })
  stream.close()
})

t.test('the stream follows the caller language, as the shell does', async (t) => {
  const german = await openStream(sales, { 'accept-language': 'de-CH,de;q=0.9' })
  const english = await openStream(sales)
  t.equal(german.headers['content-language'], 'de')
  const germanFirst = await german.waitForEvents(1)
  const englishFirst = await english.waitForEvents(1)
  t.equal(germanFirst.id, tagOf(await shellETag(sales, { 'accept-language': 'de' })))
  t.not(germanFirst.id, englishFirst.id)

  await setLabel('contacts', 'Kontaktliste', 'de')
  const changed = await german.waitForEvents(2)
  t.equal(changed.id, tagOf(await shellETag(sales, { 'accept-language': 'de' })))
  // A change English callers see, after the German one was sent: their next event is its.
  await setLabel('contacts', 'Contact list')
  const englishNext = await english.waitForEvents(2)
  t.equal(
    englishNext.id,
    tagOf(await shellETag(sales)),
    'the English change reaches English streams',
  )
  t.equal(english.events.length, 2, 'and the German label change sent them nothing')
  german.close()
  english.close()
})

t.test("a change that alters one caller's bytes and leaves another's alone", async (t) => {
  const salesStream = await openStream(sales)
  const adminStream = await openStream(admin)
  await salesStream.waitForEvents(1)
  await adminStream.waitForEvents(1)
  // Only crm-admin sees the item "admin".
  await setLabel('admin', 'Admin area')
  const adminEvent = await adminStream.waitForEvents(2)
  t.equal(adminEvent.id, tagOf(await shellETag(admin)))
  t.equal(salesStream.events[0]?.id, tagOf(await shellETag(sales)), "sales's tag still holds")

  // A change every caller sees, after the first was sent: sales's next event is its.
  await setLabel('dashboard', 'Home')
  const salesEvent = await salesStream.waitForEvents(2)
  t.equal(salesEvent.id, tagOf(await shellETag(sales)))
  t.equal(salesStream.events.length, 2, 'nothing for sales from a change that left its bytes alone')
  salesStream.close()
  adminStream.close()
})

t.test('a burst of twenty changes gives a few events, the last with the current tag', async (t) => {
  const stream = await openStream(sales)
  await stream.waitForEvents(1)
  for (let change = 0; change < 20; change += 1) {
    await setLabel('dashboard', `Dashboard ${change}`)
    await sleep(10)
  }
  // The last event, once the burst is over, carries the tag a GET returns then.
  let finalTag = ''
  await waitFor(async () => {
    finalTag = tagOf(await shellETag(sales))
    return stream.events.at(-1)?.id === finalTag && finalTag.length > 0
  }, 'the final tag to arrive')
  // One change more: whatever the burst still had to send comes before its event.
  await setLabel('dashboard', 'After the burst')
  let marker = finalTag
  await waitFor(async () => {
    marker = tagOf(await shellETag(sales))
    return marker !== finalTag && stream.events.at(-1)?.id === marker
  }, 'the change after the burst, served and sent')
  const events = stream.events.slice(1, -1)
  t.ok(events.length >= 1 && events.length <= 6, `${events.length} events for 20 changes`)
  t.equal(events.at(-1)?.id, finalTag, 'the last event carries the tag a GET returns')
  for (let index = 1; index < stream.events.length; index += 1)
    t.not(stream.events[index]?.id, stream.events[index - 1]?.id, 'never the same tag twice')
  stream.close()
})

t.test(
  'Last-Event-ID equal to the current tag: no first event, later changes still come',
  async (t) => {
    const current = tagOf(await shellETag(sales))
    const stream = await openStream(sales, { 'last-event-id': current })
    t.equal(stream.status, 200)
    // A stream starts with its first event or, in its place, this comment.
    await waitFor(() => stream.comments.length > 0, 'the stream to open')
    t.equal(stream.events.length, 0, 'no first event')
    await setLabel('contacts', 'People')
    const next = await stream.waitForEvents(1)
    t.equal(next.id, tagOf(await shellETag(sales)))
    const stale = await openStream(sales, { 'last-event-id': current })
    t.equal((await stale.waitForEvents(1)).id, next.id, 'an older id gets the current tag at once')
    stream.close()
    stale.close()
  },
)

t.test('errors before the stream starts are problems, as on the shell', async (t) => {
  const anonymous = await openEventStream(url, EVENTS)
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer realm="shell"')
  t.match(anonymous.headers['content-type'], /^application\/problem\+json/)
  const expired = await openStream(await jwks.sign({}, { expiresInS: -3600 }))
  t.equal(expired.status, 401)
  t.match(JSON.parse(await expired.body()).title, 'Invalid token')
  const unknown = await openStream(sales, {}, '/api/v1/shell/nope/events')
  t.equal(unknown.status, 404)
  const malformed = await httpRequest(url, '/api/v1/shell/NOPE/events', bearer(sales))
  expectProblem(t, malformed, 404)
  const post = await httpRequest(url, EVENTS, { method: 'POST' })
  expectProblem(t, post, 405)
})

t.test('an app deleted: gone, then the stream ends', async (t) => {
  await db.sql`insert into shell.apps (app_key, name) values ('temp', 'Temporary')`
  const path = '/api/v1/shell/temp/events'
  await waitFor(
    async () => (await httpRequest(url, '/api/v1/shell/temp', bearer(sales))).status === 200,
    'the new app',
  )
  const stream = await openStream(sales, {}, path)
  await stream.waitForEvents(1)
  const goneBefore = await metricValue('shell_events_sent_total{event="gone"}')
  await db.sql`delete from shell.apps where app_key = 'temp'`
  const gone = await stream.waitForEvents(2)
  t.equal(gone.event, 'gone')
  await stream.ended
  t.ok(stream.hasEnded(), 'the server ended the stream')
  t.equal(await metricValue('shell_events_sent_total{event="gone"}'), goneBefore + 1)
})

t.test("the stream ends at the token's exp", async (t) => {
  const shortLived = await jwks.sign(
    { sub: 'brief', realm_access: { roles: [] } },
    { expiresInS: 3 },
  )
  const openedAt = Date.now()
  const stream = await openStream(shortLived)
  await stream.waitForEvents(1)
  await stream.ended
  const livedMs = Date.now() - openedAt
  // exp is in whole seconds, so the token lived 2 to 3 s; the timer may fire a little late.
  t.ok(livedMs >= 1_500 && livedMs < 6_000, `ended after ${livedMs} ms`)
})

t.test('a keep-alive comment comes on a quiet stream', async (t) => {
  const stream = await openStream(admin)
  await stream.waitForEvents(1)
  await waitFor(() => stream.comments.includes('keep-alive'), 'a keep-alive', 20_000)
  t.equal(stream.events.length, 1, 'a comment, not an event')
  stream.close()
})

t.test('a client that goes away mid-stream harms nothing', async (t) => {
  const stream = await openStream(sales)
  await stream.waitForEvents(1)
  const before = await metricValue('shell_event_streams')
  stream.close()
  await waitFor(
    async () => (await metricValue('shell_event_streams')) === before - 1,
    'the gauge to drop',
  )
  await setLabel('accounts', 'Companies')
  const after = await openStream(sales)
  const settled = tagOf(await shellETag(sales))
  await waitFor(() => after.events.at(-1)?.id === settled, 'the stream to hold the tag')
  t.equal(after.status, 200, 'the service still streams after a client left')
  after.close()
})

t.test('metrics count open streams and sent events', async (t) => {
  const idle = await metricValue('shell_event_streams')
  const sentBefore = await metricValue('shell_events_sent_total{event="shell"}')
  const streams = await Promise.all([openStream(sales), openStream(admin), openStream(sales)])
  await Promise.all(streams.map((stream) => stream.waitForEvents(1)))
  t.equal(await metricValue('shell_event_streams'), idle + 3)
  // At least: a change of an earlier test may still reach streams in flight.
  t.ok((await metricValue('shell_events_sent_total{event="shell"}')) >= sentBefore + 3)
  for (const stream of streams) stream.close()
  await waitFor(async () => (await metricValue('shell_event_streams')) === idle, 'streams gone')
  t.ok((await metricValue('shell_event_streams_ended_total{reason="client"}')) >= 3)
})

t.test('a stream is timed when its head goes out, not when it ends hours later', async (t) => {
  const timed =
    'shell_http_request_duration_seconds_count{route="/api/v1/shell/:appKey/events",method="GET",status_code="200"}'
  const before = await metricValue(timed)
  const stream = await openStream(sales)
  await stream.waitForEvents(1)
  t.equal(await metricValue(timed), before + 1, 'counted while it is open')
  stream.close()
})

t.test('past EVENT_STREAMS_MAX: 503 with Retry-After; room again once one ends', async (t) => {
  const limited = await startTestService(t, { logs, db, jwks, env: { EVENT_STREAMS_MAX: '2' } })
  const open = (caller: string) =>
    openEventStream(limited.url, EVENTS, { authorization: `Bearer ${caller}` })
  const first = await open(sales)
  const second = await open(admin)
  const third = await open(sales)
  t.equal(first.status, 200)
  t.equal(second.status, 200)
  t.equal(third.status, 503)
  t.match(third.headers['retry-after'], /^\d+$/)
  t.equal(JSON.parse(await third.body()).status, 503)
  first.close()
  await first.ended
  let fourth: EventStreamClient | undefined
  await waitFor(async () => {
    fourth?.close()
    fourth = await open(sales)
    return fourth.status === 200
  }, 'room for another stream')
  fourth?.close()
  second.close()
})

t.test('shutdown ends every stream first, so the drain does not wait for them', async (t) => {
  const doomed = await startTestService(t, { logs, db, jwks })
  const streams = await Promise.all(
    [sales, admin, sales].map((caller) =>
      openEventStream(doomed.url, EVENTS, { authorization: `Bearer ${caller}` }),
    ),
  )
  await Promise.all(streams.map((stream) => stream.waitForEvents(1)))
  const startedAt = Date.now()
  await doomed.close()
  const tookMs = Date.now() - startedAt
  await Promise.all(streams.map((stream) => stream.ended))
  t.ok(tookMs < 3_000, `closed in ${tookMs} ms with three streams open`)
})

t.test(
  'after the shutdown ended the streams, a new one on an open connection: 503, Retry-After: 1',
  async (t) => {
    const doomed = await startTestService(t, { logs, db, jwks })
    const serverSockets: Socket[] = []
    doomed.service.app.server.on('connection', (socket: Socket) => serverSockets.push(socket))
    const stream = await openEventStream(doomed.url, EVENTS, { authorization: `Bearer ${sales}` })
    await stream.waitForEvents(1)
    // A stream request begun on a connection of its own, finished only once the drain began:
    // a busy connection stays open through the drain, as a client's kept-alive one may.
    const connection = await openConnection(doomed.url)
    t.teardown(() => connection.destroy())
    const head = `GET ${EVENTS} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${sales}\r\n`
    const readBytes = () => serverSockets.reduce((sum, socket) => sum + socket.bytesRead, 0)
    const before = readBytes()
    connection.write(head)
    await waitFor(() => readBytes() >= before + head.length, 'the service to read the request')

    const closed = doomed.close()
    await stream.ended
    connection.write('\r\n')
    const refused = await connection.nextResponse()
    t.equal(refused.status, 503)
    t.equal(refused.headers['retry-after'], '1', 'back in a second, to another instance')
    t.equal(refused.headers.connection, 'close')
    t.match(refused.json(), { status: 503, detail: /shutting down/ })
    await closed
  },
)

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
  t.ok(service)
})
