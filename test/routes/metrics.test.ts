import { spawn, spawnSync } from 'node:child_process'
import t from 'tap'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'

/**
 * The real /metrics of a running service, process metrics included, passes
 * Prometheus's own linter: `promtool check metrics` (Debian package
 * `prometheus`, which .ci/run installs) prints nothing about it.
 */

const PROMTOOL = 'promtool'
const missing = spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).error
const skip = missing === undefined ? false : `${PROMTOOL} not found: apt-get install prometheus`

t.test('promtool check metrics finds nothing to complain about', { skip }, async (t) => {
  const logs = createLogCapture()
  const { url, token } = await startTestService(t, { logs, defaultMetrics: true })
  // Requests of every kind first, so that each labelled series has samples to lint.
  const caller = await token({ roles: ['crm-sales'] })
  const shell = await httpRequest(url, '/api/v1/shell/crm', bearer(caller))
  t.equal(shell.status, 200)
  const etag = String(shell.headers.etag)
  const revalidated = await httpRequest(
    url,
    '/api/v1/shell/crm',
    bearer(caller, { 'if-none-match': etag }),
  )
  t.equal(revalidated.status, 304)
  t.equal((await httpRequest(url, '/api/v1/apps')).status, 401)
  t.equal((await httpRequest(url, '/api/v1/shell/nope', bearer(caller))).status, 404)
  const stream = await openEventStream(url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${caller}`,
  })
  await stream.waitForEvents(1)

  const metrics = await httpRequest(url, '/metrics')
  stream.close()
  t.equal(metrics.status, 200)
  // promtool passes an empty input: make sure it lints the real thing.
  t.match(metrics.text, /^process_cpu_user_seconds_total \d/m, "prom-client's process metrics")
  t.match(metrics.text, /^# TYPE nodejs_active_handles gauge$/m, 'active handles by type')
  t.match(metrics.text, /^shell_http_request_duration_seconds_count\{[^}]*status_code="304"/m)
  t.match(metrics.text, /^shell_events_sent_total\{event="shell"\} [1-9]/m)

  const lint = await runPromtool(metrics.body)
  t.equal(lint.output, '', 'promtool prints nothing')
  t.equal(lint.exitCode, 0, 'and exits 0')
  t.same(logs.leaks(), [])
})

/** Feeds the exposition to `promtool check metrics` on stdin; its stdout and stderr together. */
function runPromtool(exposition: Buffer): Promise<{ exitCode: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] })
    const chunks: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk))
    child.on('error', reject)
    child.on('close', (exitCode) =>
      resolve({ exitCode, output: Buffer.concat(chunks).toString('utf8') }),
    )
    child.stdin.end(exposition)
  })
}
