import { readFileSync } from 'node:fs'
import { collectDefaultMetrics, Registry } from 'prom-client'
import t from 'tap'
import { CONFIG_VARIABLES } from '../../src/config/variables.js'
import { createMetrics } from '../../src/metrics.js'

/**
 * docs/operations.md keeps up with the service: every setting and every
 * metric is described. Its alerts and their runbooks are checked with the
 * rules in monitoring-rules.test.ts.
 */

const guide = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')

t.test('every configuration variable is described', async (t) => {
  for (const name of CONFIG_VARIABLES) {
    t.match(guide, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} has a row`)
  }
})

t.test('every metric of the service is described', async (t) => {
  const { registry } = createMetrics({ defaultMetrics: false })
  const metrics = registry.getMetricsAsArray()
  t.ok(metrics.length >= 9, 'the nine documented metrics at least')
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
