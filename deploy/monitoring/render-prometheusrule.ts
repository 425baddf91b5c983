/**
 * Writes prometheusrule.yaml, the Prometheus Operator's form of the alerting
 * rules, from shell-data.rules.yaml, so that the two cannot drift: the rules
 * file is the one that people edit, and test/deploy/monitoring-rules.test.ts
 * fails while the PrometheusRule is not what this renders from it.
 *
 *   node --import tsx deploy/monitoring/render-prometheusrule.ts
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const RULES_FILE = new URL('./shell-data.rules.yaml', import.meta.url)
export const PROMETHEUS_RULE_FILE = new URL('./prometheusrule.yaml', import.meta.url)

const HEADER = [
  ' Generated from shell-data.rules.yaml by render-prometheusrule.ts: do not edit.',
  ' Change the rules there, then run',
  '   node --import tsx deploy/monitoring/render-prometheusrule.ts',
  '',
  ' The alerting rules as a PrometheusRule (Prometheus Operator, kube-prometheus).',
  " Its Prometheus picks it up when this object's labels match its ruleSelector:",
  ' add them in kustomization.yaml (docs/operations.md, "Alerts and dashboard").',
].join('\n')

/**
 * The PrometheusRule whose spec.groups is the rules file's `groups:` block as
 * written, comments and line breaks included: the block indented under
 * `spec:`, which YAML reads as the same value.
 */
export function renderPrometheusRule(rulesYaml: string): string {
  const groupsAt = rulesYaml.search(/^groups:/m)
  if (groupsAt < 0) throw new Error('the rules file has no top-level groups: key')
  const groups = rulesYaml
    .slice(groupsAt)
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n')
  const header = HEADER.split('\n').map((line) => `#${line}`.trimEnd())
  return [
    ...header,
    'apiVersion: monitoring.coreos.com/v1',
    'kind: PrometheusRule',
    'metadata:',
    '  name: shell-data',
    '  labels:',
    '    app.kubernetes.io/name: shell-data',
    '    app.kubernetes.io/part-of: shell',
    'spec:',
    groups,
  ].join('\n')
}

if (
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(resolve(process.argv[1])).href
) {
  writeFileSync(PROMETHEUS_RULE_FILE, renderPrometheusRule(readFileSync(RULES_FILE, 'utf8')))
  process.stdout.write(`wrote ${fileURLToPath(PROMETHEUS_RULE_FILE)}\n`)
}
