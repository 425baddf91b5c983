import t, { type Test } from 'tap'
import { parseDocument } from 'yaml'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import {
  type ActiveAlert,
  type PrometheusServer,
  prometheusMissing,
  type Sample,
  startPrometheus,
} from '../helpers/prometheus.js'
import { importSeeds } from '../helpers/service.js'
import { spawnService } from '../helpers/service-process.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'
import { waitFor } from '../helpers/wait.js'
import {
  alertSignals,
  type Dashboard,
  dashboardQueries,
  readAlertRules,
  readDashboard,
  readRulesText,
  variableQuery,
} from './monitoring-files.js'

/**
 * The alerting rules and the dashboard against a real Prometheus (Debian's
 * package) that scrapes a running instance every second, and evaluates the
 * rules every second:
 *
 * - Every expression is valid and returns data: at least one sample that is
 *   a number, not NaN (a panel that draws nothing is a defect). An alert's
 *   expression returns nothing while all is well, by design, so its signals
 *   must return data instead: the expression cut at its top-level and/or/
 *   unless, each part without its comparison against a threshold
 *   (alertSignals). Every rule is loaded and evaluates without error.
 * - End to end, once: the database of the running instance stops, and
 *   Prometheus reports ShellDataFeedNotListening firing (its `for` shortened
 *   to 2 s in this copy of the rules); the database starts again, and the
 *   alert resolves.
 */

const JOB = 'shell-data'
const FEED_ALERT = 'ShellDataFeedNotListening'
/** Stands in for Grafana's $__rate_interval: a 1 s scrape gives 60 samples, and the traffic below is recent. */
const RATE_INTERVAL = '1m'
/** Two streams accepted: the test opens both, and a third gets the 503 that the 5xx queries need. */
const EVENT_STREAMS_MAX = 2

const skip = prometheusMissing()

t.test('a real Prometheus scraping a running instance', { skip }, async (t) => {
  const postgres = await startPrivatePostgres()
  t.teardown(() => postgres.remove())
  const databaseUrl = postgres.urlFor('shell_data')
  await prepareDatabase(postgres.adminUrl, databaseUrl)

  const port = await findFreePort()
  const target = `127.0.0.1:${port}`
  const base = `http://${target}`
  const service = spawnService(t, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    EVENT_STREAMS_MAX: String(EVENT_STREAMS_MAX),
  })
  // Local mode: the ready line carries a token of the service's own issuer.
  const ready = await service.waitForLine(
    (line) => typeof line.curl === 'string',
    'the local-mode curl line',
    45_000,
  )
  const token = /Bearer (\S+)'/.exec(String(ready.curl))?.[1] ?? ''
  t.ok(token, 'a local token')

  const prometheus = await startPrometheus(t, { jobName: JOB, target, rulesYaml: readRulesText() })
  await waitForPrometheus(
    'the first scrape of the instance',
    async () => (await prometheus.query(`up{job="${JOB}"} == 1`)).length === 1,
  )
  // After the first scrape, so that every counter below moves under Prometheus's eyes.
  await generateTraffic(t, prometheus, base, token, databaseUrl)

  await t.test('every expression of the rules and of the dashboard returns data', async (t) => {
    const rules = readAlertRules()
    for (const rule of rules) {
      await t.resolves(prometheus.query(rule.expr), `${rule.alert}: a valid expression`)
    }
    await waitForPrometheus('every rule evaluated', async () =>
      (await prometheus.rules()).every((rule) => rule.health !== 'unknown'),
    )
    for (const state of await prometheus.rules()) {
      t.equal(
        state.health,
        'ok',
        `${state.name} evaluates${state.lastError ? `: ${state.lastError}` : ''}`,
      )
    }
    t.same(
      (await prometheus.rules()).map((state) => state.name).sort(),
      rules.map((rule) => rule.alert).sort(),
      'Prometheus loaded every alert of the file',
    )

    const dashboard = readDashboard()
    const values = await resolveVariables(t, prometheus, dashboard, target)
    const checks = [
      ...rules.flatMap((rule) =>
        alertSignals(rule.expr).map((signal) => ({ what: `${rule.alert} signal`, expr: signal })),
      ),
      ...dashboardQueries(dashboard).map((query) => ({
        what: `panel "${query.panel}" query ${query.refId}`,
        expr: substituteVariables(query.expr, values),
      })),
    ]
    for (const check of checks) t.notMatch(check.expr, /\$/, `${check.what}: no variable left`)
    const answered = await waitForData(prometheus, checks)
    for (const check of checks) t.ok(answered.has(check), `${check.what} returns data`)
  })

  await t.test('the feed alert fires while the database is down, and resolves', async (t) => {
    await prometheus.replaceRules(withFor(readRulesText(), FEED_ALERT, '2s'))
    await waitForPrometheus(
      `${FEED_ALERT} reloaded with for: 2s`,
      async () =>
        (await prometheus.rules()).find((rule) => rule.name === FEED_ALERT)?.duration === 2,
    )
    await waitForPrometheus(
      'the feed listening, as Prometheus sees it',
      async () =>
        (await prometheus.query(`shell_feed_listening{instance="${target}"} == 1`)).length === 1,
    )
    t.same(await feedAlerts(prometheus), [], 'no feed alert while the database answers')

    const stoppedAt = Date.now()
    await postgres.stop()
    let firing: ActiveAlert | undefined
    await waitForPrometheus(
      `${FEED_ALERT} firing after the database stopped`,
      async () => {
        firing = (await feedAlerts(prometheus)).find((alert) => alert.state === 'firing')
        return firing !== undefined
      },
      30_000,
    )
    t.comment(`firing ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after the database stopped`)
    t.match(firing?.labels, {
      alertname: FEED_ALERT,
      instance: target,
      job: JOB,
      severity: 'warning',
    })
    t.match(
      firing?.annotations.description,
      `${target} (job ${JOB})`,
      'the text names the instance',
    )
    t.match(firing?.annotations.runbook_url, /#shelldatafeednotlistening$/)

    const startedAt = Date.now()
    await postgres.start()
    await waitForPrometheus(
      `${FEED_ALERT} resolved after the database started again`,
      async () => (await feedAlerts(prometheus)).length === 0,
      45_000,
    )
    t.comment(`resolved ${((Date.now() - startedAt) / 1000).toFixed(1)} s after it started again`)
    const listening = await prometheus.query(`shell_feed_listening{instance="${target}"}`)
    t.equal(listening[0]?.value, '1', 'listening again')
  })
})

/** A database of the test's own on the private server, migrated, with seeds/ imported. */
async function prepareDatabase(adminUrl: string, databaseUrl: string): Promise<void> {
  const admin = connectDatabase(adminUrl, { max: 1 })
  try {
    await admin.unsafe(`create database "${new URL(databaseUrl).pathname.slice(1)}"`)
  } finally {
    await admin.end()
  }
  const sql = connectDatabase(databaseUrl, { max: 1 })
  try {
    await migrateDatabase(sql)
    await importSeeds(sql)
  } finally {
    await sql.end()
  }
}

/**
 * Requests of every kind the panels and alert signals count: answers of each
 * class, verifications that fail, streams up to the limit and one refused,
 * and a change in the database, which reloads the snapshot and sends events.
 * The answers go twice, a scrape apart: a series of the request histogram is
 * born at its first request, and rate() sees only what it counts after a
 * scrape has seen the series. The streams stay open to the end (the streams
 * panels count them).
 */
async function generateTraffic(
  t: Test,
  prometheus: PrometheusServer,
  base: string,
  token: string,
  databaseUrl: string,
): Promise<void> {
  const streams = []
  for (let opened = 0; opened < EVENT_STREAMS_MAX; opened += 1) {
    const stream = await openEventStream(base, '/api/v1/shell/crm/events', {
      authorization: `Bearer ${token}`,
    })
    t.teardown(() => stream.close())
    t.equal(stream.status, 200)
    await stream.waitForEvents(1)
    streams.push(stream)
  }
  await answerOfEveryKind(t, base, token)
  await waitForPrometheus(
    'a scrape with the series of those answers',
    async () =>
      (await prometheus.query('shell_http_request_duration_seconds_count{status_code="503"}'))
        .length === 1,
  )
  await answerOfEveryKind(t, base, token)

  const writer = connectDatabase(databaseUrl, { max: 1 })
  try {
    await writer`update shell.apps set name = name || ' (renamed)' where app_key = 'crm'`
  } finally {
    await writer.end()
  }
  for (const stream of streams) await stream.waitForEvents(2, 15_000)
}

/** 200, 304, 404, 401 (no token, a malformed one, a forged one) and a 503 (a stream too many). */
async function answerOfEveryKind(t: Test, base: string, token: string): Promise<void> {
  const shell = await httpRequest(base, '/api/v1/shell/crm', bearer(token))
  t.equal(shell.status, 200)
  t.equal((await httpRequest(base, '/api/v1/shell/crm', bearer(token))).status, 200)
  const revalidate = bearer(token, { 'if-none-match': String(shell.headers.etag) })
  t.equal((await httpRequest(base, '/api/v1/shell/crm', revalidate)).status, 304)
  t.equal((await httpRequest(base, '/api/v1/apps', bearer(token))).status, 200)
  t.equal((await httpRequest(base, '/api/v1/shell/nope', bearer(token))).status, 404)
  t.equal((await httpRequest(base, '/api/v1/apps')).status, 401, 'no token')
  t.equal((await httpRequest(base, '/api/v1/apps', bearer('not-a-token'))).status, 401)
  const forged = `${token.slice(0, -4)}AAAA`
  t.equal((await httpRequest(base, '/api/v1/apps', bearer(forged))).status, 401)
  const refused = await openEventStream(base, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${token}`,
  })
  t.equal(refused.status, 503, 'a stream past EVENT_STREAMS_MAX')
  await refused.body()
}

/**
 * Grafana's values for the dashboard's variables, read as Grafana reads them
 * (label_values through the series API): the job and this instance must be
 * among them. A variable that allows All gets its allValue, as with All chosen.
 */
async function resolveVariables(
  t: Test,
  prometheus: PrometheusServer,
  dashboard: Dashboard,
  instance: string,
): Promise<Map<string, string>> {
  const values = new Map<string, string>()
  const expected: Record<string, string> = { job: JOB, instance }
  for (const variable of dashboard.templating.list) {
    const query = variableQuery(variable)
    const labelValues = /^label_values\((.+),\s*(\w+)\)$/.exec(query)
    t.ok(labelValues, `${variable.name}: label_values(selector, label): ${query}`)
    const [, selector = '', label = ''] = labelValues ?? []
    const found = await prometheus.labelValues(label, substituteVariables(selector, values))
    t.ok(found.includes(expected[variable.name] ?? ''), `${variable.name} offers ${found}`)
    values.set(variable.name, variable.allValue ?? expected[variable.name] ?? '')
  }
  return values
}

function substituteVariables(expr: string, values: ReadonlyMap<string, string>): string {
  return expr
    .replaceAll('$__rate_interval', RATE_INTERVAL)
    .replace(/\$\{?(\w+)\}?/g, (whole, name: string) => values.get(name) ?? whole)
}

interface DataCheck {
  readonly what: string
  readonly expr: string
}

/** A number to draw or to compare: NaN (0/0, a quantile of nothing) draws nothing. */
function hasData(samples: readonly Sample[]): boolean {
  return samples.some((sample) => Number.isFinite(Number(sample.value)))
}

/**
 * Polls every check until each has answered with data: rates need two
 * samples in their window and increases a scrape after the traffic. Fails
 * naming each expression still without data, and what it gave.
 */
async function waitForData(
  prometheus: PrometheusServer,
  checks: readonly DataCheck[],
): Promise<Set<DataCheck>> {
  const answered = new Set<DataCheck>()
  const lastAnswer = new Map<DataCheck, string>()
  try {
    await waitFor(
      async () => {
        for (const check of checks.filter((candidate) => !answered.has(candidate))) {
          const samples = await prometheus.query(check.expr)
          if (hasData(samples)) answered.add(check)
          else lastAnswer.set(check, JSON.stringify(samples.map((sample) => sample.value)))
        }
        return answered.size === checks.length
      },
      'data',
      30_000,
    )
  } catch {
    const missing = checks
      .filter((check) => !answered.has(check))
      .map((check) => `${check.what}: ${check.expr} gave ${lastAnswer.get(check)}`)
    throw new Error(`no data within 30 s:\n${missing.join('\n')}`)
  }
  return answered
}

/** waitFor with Prometheus's pace in mind: a scrape and an evaluation each second. */
function waitForPrometheus(what: string, condition: () => Promise<boolean>, timeoutMs = 20_000) {
  return waitFor(condition, what, timeoutMs)
}

async function feedAlerts(prometheus: PrometheusServer): Promise<ActiveAlert[]> {
  return (await prometheus.alerts()).filter((alert) => alert.labels.alertname === FEED_ALERT)
}

/** The rules with one alert's `for` replaced: the test's copy, never the file. */
function withFor(rulesYaml: string, alert: string, duration: string): string {
  const document = parseDocument(rulesYaml)
  const groups = document.toJS() as { groups: { rules: { alert: string }[] }[] }
  for (const [groupIndex, group] of groups.groups.entries()) {
    const ruleIndex = group.rules.findIndex((rule) => rule.alert === alert)
    if (ruleIndex >= 0) {
      document.setIn(['groups', groupIndex, 'rules', ruleIndex, 'for'], duration)
      return document.toString()
    }
  }
  throw new Error(`no alert ${alert} in the rules`)
}
