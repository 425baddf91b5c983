import { connect, createServer, type Server, type Socket } from 'node:net'
import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import {
  createLogCapture,
  createSeededDatabase,
  signCaller,
  startTestService,
} from '../helpers/service.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { waitFor } from '../helpers/wait.js'

/** /healthz, /readyz and /metrics: no token, and what the probes and metrics promise. */

const logs = createLogCapture()
const db = await createSeededDatabase(t)

t.test('/healthz and /readyz once the snapshot is loaded', async (t) => {
  const { url, service } = await startTestService(t, { logs, db })
  const health = await httpRequest(url, '/healthz')
  t.equal(health.status, 200)
  t.match(health.headers['content-type'], /^application\/json/)
  t.strictSame(health.json(), { status: 'ok' })

  const ready = await httpRequest(url, '/readyz')
  t.equal(ready.status, 200)
  t.match(ready.headers['content-type'], /^application\/json/)
  const body = ready.json<{ status: string; snapshot: Record<string, unknown> }>()
  t.same(Object.keys(body), ['status', 'snapshot'])
  t.equal(body.status, 'ready')
  t.same(Object.keys(body.snapshot), ['version', 'loadedAt', 'confirmedAt', 'apps', 'source'])
  t.equal(body.snapshot.source, 'database', 'read from the database (no SNAPSHOT_FILE)')
  t.equal(body.snapshot.version, service.feed.current()?.version)
  t.type(body.snapshot.version, 'string')
  t.equal(body.snapshot.apps, 1)
  const loadedAt = String(body.snapshot.loadedAt)
  t.equal(new Date(loadedAt).toISOString(), loadedAt, 'an ISO timestamp')
  t.ok(Date.parse(loadedAt) <= Date.now())
  const confirmedAt = String(body.snapshot.confirmedAt)
  t.equal(new Date(confirmedAt).toISOString(), confirmedAt, 'confirmedAt: an ISO timestamp')
  t.ok(Date.parse(confirmedAt) >= Date.parse(loadedAt), 'never before loadedAt')
  const withGarbageAuth = await httpRequest(url, '/readyz', {
    headers: { authorization: 'Bearer garbage' },
  })
  t.equal(withGarbageAuth.status, 200, 'probes ignore Authorization')
})

t.test(
  '/readyz: 503 not_ready before the first snapshot, 200 once the database is reachable',
  async (t) => {
    const port = await findFreePort()
    const target = new URL(db.url)
    const reachableLater = new URL(db.url)
    reachableLater.hostname = '127.0.0.1'
    reachableLater.port = String(port)
    const { url, service } = await startTestService(t, {
      logs,
      db,
      env: { DATABASE_URL: reachableLater.toString() },
      waitForSnapshot: false,
    })
    const notReady = await httpRequest(url, '/readyz')
    t.equal(notReady.status, 503)
    t.match(notReady.headers['content-type'], /^application\/json/)
    const body = notReady.json()
    t.same(Object.keys(body).sort(), ['reason', 'status'])
    t.equal(body.status, 'not_ready')
    t.type(body.reason, 'string')
    t.notMatch(String(body.reason), new RegExp(target.password || 'no-password-in-url'))
    t.equal((await httpRequest(url, '/healthz')).status, 200, 'healthy while not ready')

    // The database "comes up": a forwarder on the port the service was told to use.
    const forwarder = await forwardPort(port, target.hostname, Number(target.port))
    t.teardown(() => forwarder.close())
    await waitFor(async () => (await httpRequest(url, '/readyz')).status === 200, 'readiness')
    t.ok(service.feed.current(), 'the first snapshot is loaded')
    await service.close()
  },
)

t.test(
  'losing the database after the first load keeps the instance ready and serving',
  async (t) => {
    const target = new URL(db.url)
    const proxy = await startTcpProxy(target.hostname, Number(target.port))
    t.teardown(() => proxy.close())
    const { url, service, token } = await startTestService(t, {
      logs,
      db,
      env: { DATABASE_URL: proxy.route(db.url) },
    })
    const caller = bearer(await token({ roles: ['crm-sales'] }))
    const before = await httpRequest(url, '/api/v1/shell/crm', caller)
    t.equal(before.status, 200)
    // The database becomes unreachable: every connection reset, new ones refused.
    await proxy.close()
    // At once, so that the reload's writes race the resets (src/vendor/postgres/README.md).
    service.feed.requestReload()
    await waitFor(
      async () =>
        /shell_snapshot_reloads_total\{result="error"\} [1-9]/.test(
          (await httpRequest(url, '/metrics')).body.toString(),
        ),
      'a failed reload',
    )
    const ready = await httpRequest(url, '/readyz')
    t.equal(ready.status, 200, 'still ready on the last snapshot')
    const during = await httpRequest(url, '/api/v1/shell/crm', caller)
    t.equal(during.status, 200, 'still serving')
    t.equal(during.headers.etag, before.headers.etag, 'the same content')
    // The failed reload asks for a liveness probe at once; the probe fails as soon as its
    // connection is refused, which may take a moment longer than the reload's own failure.
    await waitFor(
      async () => /shell_feed_listening 0/.test((await httpRequest(url, '/metrics')).text),
      'the feed to report that it is not listening',
    )
    t.pass('the feed reports that it is not listening')
  },
)

t.test('/readyz: with quiet data, confirmedAt moves with each check, loadedAt stays', async (t) => {
  const { url } = await startTestService(t, { logs, db: await createSeededDatabase(t) })
  type Times = { loadedAt: string; confirmedAt: string }
  const times = async () => (await httpRequest(url, '/readyz')).json<{ snapshot: Times }>().snapshot
  const first = await times()
  let later = first
  await waitFor(async () => {
    later = await times()
    return Date.parse(later.confirmedAt) > Date.parse(first.confirmedAt)
  }, 'a newer confirmation')
  t.equal(later.loadedAt, first.loadedAt, 'the data read at the same time')
})

t.test('/readyz does not depend on the identity provider', async (t) => {
  const provider = await startJwksServer(t)
  const { url } = await startTestService(t, { logs, db, jwks: provider })
  const token = await signCaller(provider, { roles: ['crm-sales'] })
  await provider.close()
  t.equal((await httpRequest(url, '/readyz')).status, 200, 'ready with the provider down')
  t.equal((await httpRequest(url, '/api/v1/apps', bearer(token))).status, 503, 'but keys are not')
  t.equal((await httpRequest(url, '/readyz')).status, 200, 'and still ready after that')
})

const METRICS: [string, string][] = [
  ['shell_http_request_duration_seconds', 'histogram'],
  ['shell_snapshot_loaded', 'gauge'],
  ['shell_snapshot_age_seconds', 'gauge'],
  ['shell_snapshot_reloads_total', 'counter'],
  ['shell_snapshot_reload_duration_seconds', 'histogram'],
  ['shell_token_verifications_total', 'counter'],
  ['shell_token_cache_total', 'counter'],
  ['shell_feed_listening', 'gauge'],
  ['shell_feed_replay_wait_seconds', 'histogram'],
  ['shell_jwks_fetches_total', 'counter'],
  ['shell_event_streams_max', 'gauge'],
]

t.test('/metrics: every documented metric and the process metrics, without a token', async (t) => {
  const { url, jwks, service } = await startTestService(t, { logs, db, defaultMetrics: true })
  const token = await signCaller(jwks, { roles: ['crm-sales'] })
  t.equal((await httpRequest(url, '/api/v1/shell/crm', bearer(token))).status, 200)
  t.equal((await httpRequest(url, '/api/v1/shell/crm', bearer(token))).status, 200)
  t.equal((await httpRequest(url, '/api/v1/apps')).status, 401)
  const cached = await httpRequest(url, '/api/v1/shell/crm', bearer(token))
  const etag = String(cached.headers.etag)
  const revalidate = bearer(token, { 'if-none-match': etag })
  t.equal((await httpRequest(url, '/api/v1/shell/crm', revalidate)).status, 304)
  t.equal((await httpRequest(url, '/api/v1/shell/nope', bearer(token))).status, 404)
  t.equal((await httpRequest(url, '/no/such/route')).status, 404)
  await waitFor(
    async () => (await service.metrics.feedListening.get()).values[0]?.value === 1,
    'LISTEN',
  )

  const confirmedAt = async () =>
    Date.parse(JSON.parse((await httpRequest(url, '/readyz')).text).snapshot.confirmedAt)
  const confirmedBefore = await confirmedAt()
  const scrapeStart = Date.now()
  const response = await httpRequest(url, '/metrics')
  const scrapeEnd = Date.now()
  const confirmedAfter = await confirmedAt()
  t.equal(response.status, 200)
  t.match(response.headers['content-type'], /^text\/plain/)
  const text = response.text
  for (const [name, type] of METRICS) t.match(text, `# TYPE ${name} ${type}\n`, name)
  t.match(text, /^process_cpu_user_seconds_total \d/m, "prom-client's process metrics")
  const sample = (pattern: string) => new RegExp(`^${pattern} (\\S+)$`, 'm').exec(text)?.[1]
  t.equal(sample('shell_snapshot_loaded'), '1')
  t.equal(sample('shell_feed_listening'), '1')
  t.equal(sample('shell_feed_replay_wait_seconds_count'), '0', 'a primary is not waited for')
  // The age runs from the confirmation /readyz shows, which the check moves between the reads.
  const ageMs = Math.round(Number(sample('shell_snapshot_age_seconds')) * 1000)
  t.ok(
    ageMs >= scrapeStart - confirmedAfter && ageMs <= scrapeEnd - confirmedBefore,
    `age ${ageMs} ms: since the last confirmation, ${scrapeStart - confirmedAfter} to ${scrapeEnd - confirmedBefore} ms`,
  )
  t.ok(Number(sample('shell_snapshot_reloads_total\\{result="success"\\}')) >= 1)
  t.ok(Number(sample('shell_token_verifications_total\\{result="ok"\\}')) >= 1)
  t.ok(Number(sample('shell_token_cache_total\\{result="hit"\\}')) >= 1)
  t.ok(Number(sample('shell_jwks_fetches_total\\{result="success"\\}')) >= 1)
  t.equal(sample('shell_event_streams_max'), '10000', 'EVENT_STREAMS_MAX, its default here')
  for (const result of [
    'ok',
    'expired',
    'invalid_signature',
    'unknown_kid',
    'invalid_audience',
    'invalid_issuer',
    'malformed',
    'keys_unavailable',
  ])
    t.ok(sample(`shell_token_verifications_total\\{result="${result}"\\}`), `result=${result}`)
  t.match(
    text,
    /^shell_http_request_duration_seconds_count\{(?=[^}]*route="\/api\/v1\/shell\/:appKey")(?=[^}]*method="GET")(?=[^}]*status_code="200")[^}]*\} 3$/m,
    'requests counted by route template, method and status',
  )
  t.match(text, /shell_http_request_duration_seconds_count\{[^}]*status_code="401"[^}]*\} 1/)
  const count = (route: string, status: number) =>
    Number(
      new RegExp(
        `^shell_http_request_duration_seconds_count\\{route="${route}",method="GET",status_code="${status}"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1],
    )
  t.equal(count('/api/v1/shell/:appKey', 304), 1, 'a 304 is counted')
  t.equal(count('/api/v1/shell/:appKey', 404), 1, 'an unknown app is counted')
  t.equal(count('unmatched', 404), 1, 'an unknown route is counted')
  t.match(
    text,
    /^shell_http_request_duration_seconds_bucket\{le="\+Inf",route="\/api\/v1\/shell\/:appKey",method="GET",status_code="200"\} 3$/m,
    'buckets are cumulative up to +Inf',
  )
  t.notMatch(text, token.split('.')[2] ?? 'x', 'no token in the metrics')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})

/** A TCP forwarder on a given port: the database "appearing" where the service looks for it. */
async function forwardPort(
  port: number,
  targetHost: string,
  targetPort: number,
): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost)
    sockets.add(client).add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.pipe(upstream).pipe(client)
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  return {
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
