import { readFileSync } from 'node:fs'
import { collectDefaultMetrics, Registry } from 'prom-client'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { CONFIG_VARIABLES } from '../../src/config/variables.js'
import { createMetrics } from '../../src/metrics.js'

/**
 * docs/operations.md keeps up with the service: every setting and every
 * metric is described, and the example alert rules parse and only use
 * metrics the service exports.
 */

const guide = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')

function serviceMetricNames(): Set<string> {
  const { registry } = createMetrics({ defaultMetrics: false })
  const names = new Set<string>()
  for (const metric of registry.getMetricsAsArray()) {
    names.add(metric.name)
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`)
    }
  }
  return names
}

interface AlertRule {
  alert?: string
  expr?: string
}

function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '')
}

t.test('every configuration variable of the contract is described', async (t) => {
  for (const name of CONFIG_VARIABLES) {
    t.match(guide, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} has a row`)
  }
})

t.test('every metric of the service is described', async (t) => {
  const { registry } = createMetrics({ defaultMetrics: false })
  const metrics = registry.getMetricsAsArray()
  t.ok(metrics.length >= 9, 'the nine metrics of the contract at least')
  for (const metric of metrics) {
    t.match(guide, new RegExp(`^\\| \`${metric.name}\` \\|`, 'm'), `${metric.name} has a row`)
  }
})

t.test(
  "prom-client's default metrics that the service leaves out have a replacement",
  async (t) => {
    const defaults = new Registry()
    collectDefaultMetrics({ register: defaults })
    const exported = new Set(
      createMetrics({ defaultMetrics: true })
        .registry.getMetricsAsArray()
        .map((metric) => metric.name),
    )
    const leftOut = defaults
      .getMetricsAsArray()
      .map((metric) => metric.name)
      .filter((name) => !exported.has(name))
    t.ok(leftOut.length > 0, 'some are left out')
    for (const name of leftOut) {
      t.match(guide, new RegExp(`^\\| \`${name}\` \\| \`sum without`, 'm'), `${name} has a row`)
    }
  },
)

t.test('the example alert rules parse and use only metrics the service exports', async (t) => {
  const known = serviceMetricNames()
  const rules = yamlBlocks(guide)
    .flatMap((block) => parseAllDocuments(block).map((document) => document.toJS()))
    .flatMap((document: { groups?: { rules?: AlertRule[] }[] } | null) => document?.groups ?? [])
    .flatMap((group) => group.rules ?? [])
  t.ok(rules.length >= 5, 'a handful of alert rules')
  for (const rule of rules) {
    t.ok(rule.alert && rule.expr, 'each rule has a name and an expression')
    for (const [name] of (rule.expr ?? '').matchAll(/\bshell_[a-z_]+/g)) {
      t.ok(known.has(name), `${rule.alert}: ${name} is exported`)
    }
  }
  const alerting = rules.map((rule) => rule.expr ?? '').join('\n')
  for (const needed of [
    'shell_snapshot_age_seconds',
    'shell_snapshot_reloads_total{result="error"}',
    'keys_unavailable',
    'status_code=~"5..',
    'shell_feed_listening',
  ]) {
    t.ok(alerting.includes(needed), `an alert watches ${needed}`)
  }
})
