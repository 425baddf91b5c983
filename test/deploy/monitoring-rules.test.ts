import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse, parseAllDocuments } from 'yaml'
import {
  PROMETHEUS_RULE_FILE,
  renderPrometheusRule,
} from '../../deploy/monitoring/render-prometheusrule.js'
import { createMetrics } from '../../src/metrics.js'
import {
  alertSignals,
  dashboardPanels,
  dashboardQueries,
  MONITORING_DIR,
  RULES_FILE,
  RULES_TEST_FILE,
  readAlertRules,
  readDashboard,
  readRuleGroups,
  readRulesText,
} from './monitoring-files.js'

/**
 * deploy/monitoring/ checked without a cluster: promtool on the rules and
 * their unit tests (Debian's package `prometheus`, which .ci/run installs),
 * the PrometheusRule against the rules file it is generated from, every
 * alert's labels, texts and runbook in docs/operations.md, the
 * ServiceMonitor against the Service, and the dashboard's import model.
 * monitoring-prometheus.test.ts runs all of it on a real Prometheus.
 */

const PROMTOOL = 'promtool'
const promtoolMissing = spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).error
const skipPromtool =
  promtoolMissing === undefined ? false : `${PROMTOOL} not found: apt-get install prometheus`

const GUIDE = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')
const KUBERNETES_DIR = new URL('../../deploy/kubernetes/', import.meta.url)
const rules = readAlertRules()

/** Every metric name the service exports, histogram series included, and Prometheus's own `up`. */
function exportedMetricNames(): Set<string> {
  const names = new Set(['up'])
  for (const metric of createMetrics({ defaultMetrics: true }).registry.getMetricsAsArray()) {
    names.add(metric.name)
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`)
    }
  }
  return names
}

/** A metric of the service (or `up`) in PromQL, with its label matchers if it has any. */
const METRIC_SELECTOR = /\b((?:shell|process|nodejs)_[a-z0-9_]+|up)\b(?!\()(\{[^}]*\})?/g

function metricNames(expr: string): string[] {
  return [...expr.matchAll(METRIC_SELECTOR)].map((match) => match[1] as string)
}

/**
 * Heading anchors as GitHub renders them: lower case, punctuation other than
 * `-` and `_` dropped, spaces to hyphens, `-1`, `-2` after repeats. Headings
 * inside fenced code blocks (shell comments) are not headings.
 */
function githubAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)
    if (heading === null) continue
    const text = (heading[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

t.test('promtool check rules passes on the rules file', { skip: skipPromtool }, async (t) => {
  const check = spawnSync(PROMTOOL, ['check', 'rules', fileURLToPath(RULES_FILE)], {
    encoding: 'utf8',
  })
  t.equal(check.status, 0, 'exits 0', { output: `${check.stdout}${check.stderr}` })
  t.match(check.stdout, `SUCCESS: ${rules.length} rules found`)
})

t.test('promtool test rules passes', { skip: skipPromtool }, async (t) => {
  const test = spawnSync(PROMTOOL, ['test', 'rules', fileURLToPath(RULES_TEST_FILE)], {
    encoding: 'utf8',
  })
  t.equal(test.status, 0, 'exits 0', { output: `${test.stdout}${test.stderr}` })
  t.match(test.stdout, 'SUCCESS')
})

t.test('every alert has a promtool case where it fires and one where it stays quiet', async (t) => {
  interface AlertCase {
    alertname: string
    exp_alerts?: unknown[]
  }
  const unitTests = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as {
    rule_files: string[]
    tests: { alert_rule_test?: AlertCase[] }[]
  }
  t.same(unitTests.rule_files, ['shell-data.rules.yaml'], 'the cases test the rules file')
  const cases = unitTests.tests.flatMap((group) => group.alert_rule_test ?? [])
  const names = new Set(rules.map((rule) => rule.alert))
  for (const testCase of cases)
    t.ok(names.has(testCase.alertname), `${testCase.alertname} is an alert`)
  for (const name of names) {
    const own = cases.filter((testCase) => testCase.alertname === name)
    t.ok(
      own.some((testCase) => (testCase.exp_alerts ?? []).length > 0),
      `${name}: a case where it fires`,
    )
    t.ok(
      own.some((testCase) => (testCase.exp_alerts ?? []).length === 0),
      `${name}: a case where it stays quiet`,
    )
  }
})

t.test('the PrometheusRule is generated from the rules file, and up to date', async (t) => {
  const committed = readFileSync(PROMETHEUS_RULE_FILE, 'utf8')
  t.equal(
    committed,
    renderPrometheusRule(readRulesText()),
    'what render-prometheusrule.ts makes of the rules file (if not, run: node --import tsx deploy/monitoring/render-prometheusrule.ts)',
  )
  const prometheusRule = parse(committed) as {
    apiVersion: string
    kind: string
    metadata: { name: string; labels: Record<string, string> }
    spec: { groups: unknown }
  }
  t.equal(prometheusRule.apiVersion, 'monitoring.coreos.com/v1')
  t.equal(prometheusRule.kind, 'PrometheusRule')
  t.equal(prometheusRule.metadata.labels['app.kubernetes.io/name'], 'shell-data')
  t.same(prometheusRule.spec.groups, readRuleGroups(), 'spec.groups equals the rules file groups')
})

t.test('each alert has a severity, a for, a summary, a description and a runbook', async (t) => {
  t.ok(rules.length >= 8, 'the eight cases docs/operations.md names at least')
  t.equal(new Set(rules.map((rule) => rule.alert)).size, rules.length, 'names are unique')
  const anchors = githubAnchors(GUIDE)
  const bases = new Set<string>()
  for (const rule of rules) {
    const name = rule.alert
    t.match(name, /^ShellData[A-Z][A-Za-z]+$/, `${name}: named after the service`)
    t.match(rule.labels?.severity, /^(critical|warning)$/, `${name}: severity`)
    t.match(rule.for, /^\d+[smh]$/, `${name}: a for duration`)
    const annotations = rule.annotations ?? {}
    t.ok(annotations.summary, `${name}: a summary`)
    t.match(
      annotations.description,
      /\{\{ \$labels\.(instance|job) \}\}/,
      `${name}: the description names what to look at`,
    )
    t.notMatch(
      `${annotations.summary} ${annotations.description}`,
      /\$labels\.(pod|namespace)/,
      `${name}: only labels a plain scrape has too`,
    )
    const runbook = /^(https:\/\/\S+\/docs\/operations\.md)#([a-z0-9-]+)$/.exec(
      annotations.runbook_url ?? '',
    )
    t.ok(runbook, `${name}: a runbook_url into docs/operations.md`)
    bases.add(runbook?.[1] ?? '')
    t.equal(runbook?.[2], name.toLowerCase(), `${name}: its fragment is the alert's name`)
    t.ok(anchors.has(runbook?.[2] ?? ''), `${name}: docs/operations.md has the heading`)
  }
  t.equal(bases.size, 1, 'one runbook base, to rewrite in one go')
  t.ok(
    GUIDE.includes([...bases][0] ?? '?'),
    'docs/operations.md gives the base and how to rewrite it',
  )
})

t.test(
  'the alerts cover what docs/operations.md lists and read only exported metrics',
  async (t) => {
    const exported = exportedMetricNames()
    for (const rule of rules) {
      const names = metricNames(rule.expr)
      t.ok(names.length > 0, `${rule.alert}: reads a metric`)
      for (const name of names) t.ok(exported.has(name), `${rule.alert}: ${name} is exported`)
    }
    const expressions = rules.map((rule) => rule.expr).join('\n')
    const cases: [string, string][] = [
      ['an instance not ready', 'shell_snapshot_loaded == 0'],
      ['the feed not listening', 'shell_feed_listening == 0'],
      ['reloads failing', 'shell_snapshot_reloads_total{result="error"}'],
      ['the snapshot behind the database', 'shell_snapshot_age_seconds >'],
      ["the provider's keys failing to fetch", 'shell_jwks_fetches_total{result="error"}'],
      ['a burst of failed token verifications', 'shell_token_verifications_total{result!~"ok'],
      ['event streams near EVENT_STREAMS_MAX', 'shell_event_streams / shell_event_streams_max'],
      ['5xx answers', 'status_code=~"5.."'],
      ['requests shed for more than a few minutes', 'rate(shell_http_shed_total'],
    ]
    for (const [what, needle] of cases) t.ok(expressions.includes(needle), `an alert on ${what}`)
  },
)

t.test('every alert the guide names is one of the rules, with its runbook', async (t) => {
  const named = new Set(
    [...GUIDE.matchAll(/\bShellData[A-Z][A-Za-z]+\b/g)].map((match) => match[0]),
  )
  const alerts = new Set(rules.map((rule) => rule.alert))
  for (const name of named) t.ok(alerts.has(name), `${name} is an alert`)
  for (const name of alerts) t.match(GUIDE, `\n### ${name}\n`, `${name} has a runbook section`)
  t.notMatch(GUIDE, /Example alert rules/, 'the examples gave way to the files')
})

t.test('alert signals: each condition without its thresholds', async (t) => {
  t.same(alertSignals('shell_feed_listening == 0'), ['shell_feed_listening'])
  t.same(
    alertSignals(
      'increase(a{result="error"}[5m]) > 0\nunless ignoring (result)\nincrease(a[5m]) > 0',
    ),
    ['increase(a{result="error"}[5m])', 'increase(a[5m])'],
  )
  t.same(alertSignals('(a / b) > 0.01\nand\nc > bool 0.01'), ['(a / b)', 'c'])
  t.same(alertSignals('max by (job) (a or b * 0) == 0'), ['max by (job) (a or b * 0)'])
  t.same(alertSignals('a > b'), ['a > b'], 'a comparison of two series stays whole')
})

interface Manifest {
  apiVersion: string
  kind: string
  metadata: { name: string; labels?: Record<string, string> }
  spec?: Record<string, unknown>
  namespace?: string
  resources?: string[]
}

function readManifests(dir: URL, name: string): Manifest[] {
  return parseAllDocuments(readFileSync(new URL(name, dir), 'utf8')).map(
    (document) => document.toJS() as Manifest,
  )
}

/** The container port a port of the Service leads to, by deployment.yaml's port names. */
function containerPortOf(servicePortName: string): number | undefined {
  const [service] = readManifests(KUBERNETES_DIR, 'service.yaml')
  const [deployment] = readManifests(KUBERNETES_DIR, 'deployment.yaml')
  const servicePorts = (service?.spec?.ports ?? []) as { name?: string; targetPort: string }[]
  const target = servicePorts.find((port) => port.name === servicePortName)?.targetPort
  const pod = deployment?.spec?.template as {
    spec: { containers: { ports: { name: string; containerPort: number }[] }[] }
  }
  return pod.spec.containers[0]?.ports.find((port) => port.name === target)?.containerPort
}

t.test('the ServiceMonitor scrapes /metrics on a named port of the Service', async (t) => {
  const [service] = readManifests(KUBERNETES_DIR, 'service.yaml')
  const [configMap] = readManifests(KUBERNETES_DIR, 'configmap.yaml')
  const [monitor] = readManifests(MONITORING_DIR, 'servicemonitor.yaml')
  t.equal(monitor?.apiVersion, 'monitoring.coreos.com/v1')
  t.equal(monitor?.kind, 'ServiceMonitor')
  const spec = monitor?.spec as {
    selector: { matchLabels: Record<string, string> }
    endpoints: { port: string; path: string }[]
    jobLabel?: string
  }
  const serviceLabels = service?.metadata.labels ?? {}
  t.ok(
    Object.entries(spec.selector.matchLabels).every(([key, value]) => serviceLabels[key] === value),
    'its selector matches the Service',
  )
  const ports = (service?.spec?.ports ?? []) as { name?: string }[]
  t.equal(spec.endpoints.length, 1)
  for (const endpoint of spec.endpoints) {
    t.ok(
      ports.some((port) => port.name === endpoint.port),
      `port ${endpoint.port} is a named port of the Service`,
    )
    t.equal(endpoint.path, '/metrics')
    // /metrics is served on ADMIN_PORT only once it is set (the ConfigMap sets it).
    const adminPort = (configMap as { data?: Record<string, string> }).data?.ADMIN_PORT
    t.equal(String(containerPortOf(endpoint.port)), adminPort, "the pods' ADMIN_PORT")
  }
  // Without jobLabel, the operator names the job after the Service: what the rules expect of `up`.
  t.equal(spec.jobLabel, undefined)
  const jobs = new Set(
    rules.flatMap((rule) => [...rule.expr.matchAll(/job="([^"]+)"/g)].map((match) => match[1])),
  )
  t.same([...jobs], [service?.metadata.name], 'the rules choose up by the Service name')
})

t.test('deploy/monitoring applies on its own; deploy/kubernetes needs no CRD', async (t) => {
  const [kustomization] = readManifests(MONITORING_DIR, 'kustomization.yaml')
  const [base] = readManifests(KUBERNETES_DIR, 'kustomization.yaml')
  t.equal(kustomization?.namespace, base?.namespace, 'the same namespace')
  t.same(kustomization?.resources, ['servicemonitor.yaml', 'prometheusrule.yaml'])
  for (const name of kustomization?.resources ?? []) {
    for (const manifest of readManifests(MONITORING_DIR, name)) {
      t.equal(manifest.apiVersion, 'monitoring.coreos.com/v1', `${manifest.kind}: an operator kind`)
      t.equal(manifest.metadata.labels?.['app.kubernetes.io/name'], 'shell-data')
    }
  }
  const baseKinds = readdirSync(KUBERNETES_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .flatMap((name) => readManifests(KUBERNETES_DIR, name))
  t.notOk(
    baseKinds.some((manifest) => manifest.apiVersion?.startsWith('monitoring.coreos.com')),
    'no Prometheus Operator kind in the base',
  )
})

t.test('the dashboard imports as it is, on the data source chosen at import', async (t) => {
  const dashboard = readDashboard()
  const [input] = dashboard.__inputs
  t.same(dashboard.__inputs.length, 1, 'one input')
  t.match(input, { name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })
  // Grafana's import replaces ${DS_PROMETHEUS} with the data source chosen for the input.
  const datasource = { type: 'prometheus', uid: `\${${input?.name}}` }
  t.equal(dashboard.id, null, 'no database id: import creates it')
  t.match(dashboard.uid, /^[a-z0-9-]{1,40}$/)
  t.ok(dashboard.schemaVersion >= 39, `a current schemaVersion (${dashboard.schemaVersion})`)
  const requires = new Set(dashboard.__requires.map((item) => `${item.type}/${item.id}`))
  t.ok(requires.has('grafana/grafana'), 'requires Grafana')
  t.ok(requires.has('datasource/prometheus'), 'requires the Prometheus data source')
  const panels = dashboardPanels(dashboard)
  t.equal(new Set(panels.map((panel) => panel.id)).size, panels.length, 'panel ids are unique')
  for (const panel of panels.filter((candidate) => candidate.type !== 'row')) {
    t.ok(requires.has(`panel/${panel.type}`), `${panel.title}: ${panel.type} is required`)
    t.same(panel.datasource, datasource, `${panel.title}: on the input data source`)
    t.ok((panel.targets ?? []).length > 0, `${panel.title}: has queries`)
    for (const target of panel.targets ?? []) t.same(target.datasource, datasource)
  }
  for (const variable of dashboard.templating.list) {
    t.same(variable.datasource, datasource, `variable ${variable.name}: on the input data source`)
  }
})

t.test('the dashboard shows what docs/operations.md lists, for the chosen instances', async (t) => {
  const queries = dashboardQueries(readDashboard())
  const exported = exportedMetricNames()
  for (const query of queries) {
    const names = metricNames(query.expr)
    t.ok(names.length > 0, `${query.panel}: reads a metric`)
    for (const name of names) t.ok(exported.has(name), `${query.panel}: ${name} is exported`)
    for (const [, name, selector] of query.expr.matchAll(METRIC_SELECTOR)) {
      t.match(selector, 'job="$job", instance=~"$instance"', `${query.panel}: ${name} as chosen`)
    }
  }
  const all = queries.map((query) => query.expr).join('\n')
  const shown: [string, RegExp][] = [
    [
      'requests per route and status',
      /by \(route, status_code\) \(rate\(shell_http_request_duration_seconds_count/,
    ],
    [
      'latency quantiles',
      /histogram_quantile\(0\.99, sum by \(le, route\) \(rate\(shell_http_request_duration_seconds_bucket/,
    ],
    ['readiness', /shell_snapshot_loaded\{/],
    ['snapshot age', /shell_snapshot_age_seconds\{/],
    ['reloads', /shell_snapshot_reloads_total\{/],
    ['the feed', /shell_feed_listening\{/],
    ['token verifications by result', /by \(result\) \(rate\(shell_token_verifications_total/],
    ['cache hits', /shell_token_cache_total\{[^}]*result="hit"/],
    ['key fetches', /shell_jwks_fetches_total\{/],
    ['open streams', /shell_event_streams\{/],
    ['events sent', /shell_events_sent_total\{/],
  ]
  for (const [what, pattern] of shown) t.match(all, pattern, `a panel shows ${what}`)
})
