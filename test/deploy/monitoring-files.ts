/** deploy/monitoring/ as the monitoring tests read it: the alerting rules and the dashboard. */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { RULES_FILE } from '../../deploy/monitoring/render-prometheusrule.js'

export const MONITORING_DIR = new URL('../../deploy/monitoring/', import.meta.url)
export const RULES_TEST_FILE = new URL('shell-data.rules.test.yaml', MONITORING_DIR)
export const DASHBOARD_FILE = new URL('grafana-dashboard.json', MONITORING_DIR)
export { RULES_FILE }

export interface AlertRule {
  alert: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

export interface RuleGroup {
  name: string
  rules: AlertRule[]
}

export function readRulesText(): string {
  return readFileSync(RULES_FILE, 'utf8')
}

export function readRuleGroups(text: string = readRulesText()): RuleGroup[] {
  return (parse(text) as { groups: RuleGroup[] }).groups
}

export function readAlertRules(): AlertRule[] {
  return readRuleGroups().flatMap((group) => group.rules)
}

export interface DashboardTarget {
  datasource?: { type?: string; uid?: string }
  expr?: string
  refId: string
}

export interface DashboardPanel {
  id: number
  type: string
  title: string
  datasource?: { type?: string; uid?: string }
  targets?: DashboardTarget[]
  /** A collapsed row holds its panels. */
  panels?: DashboardPanel[]
}

export interface DashboardVariable {
  name: string
  type: string
  datasource?: { type?: string; uid?: string }
  query?: string | { query?: string }
  allValue?: string
}

export interface Dashboard {
  __inputs: { name: string; type: string; pluginId: string }[]
  __requires: { type: string; id: string }[]
  id: number | null
  uid: string
  title: string
  schemaVersion: number
  panels: DashboardPanel[]
  templating: { list: DashboardVariable[] }
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard
}

/** Every panel, those inside collapsed rows included. */
export function dashboardPanels(dashboard: Dashboard): DashboardPanel[] {
  return dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])])
}

/** Every query of every panel, named after its panel. */
export function dashboardQueries(
  dashboard: Dashboard,
): { panel: string; refId: string; expr: string }[] {
  return dashboardPanels(dashboard).flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      panel: panel.title,
      refId: target.refId,
      expr: target.expr ?? '',
    })),
  )
}

export function variableQuery(variable: DashboardVariable): string {
  return typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '')
}

/**
 * The signals of an alert's condition: the expression split at its top-level
 * `and`, `or` and `unless` (their on/ignoring dropped), and each part without
 * a top-level comparison against a number. `a > 0.1 and b > 0.05` gives `a`
 * and `b`; a comparison between two series stays whole.
 */
export function alertSignals(expr: string): string[] {
  return splitTopLevel(expr, /^(and|or|unless)\b/)
    .map((part) => part.replace(/^\s*(on|ignoring)\s*\([^)]*\)/, ''))
    .map(dropThresholdComparison)
    .map((part) => part.trim())
}

function dropThresholdComparison(part: string): string {
  const [left, right] = splitTopLevel(part, /^(==|!=|>=|<=|>|<)/, 1)
  if (right === undefined) return part
  return /^\s*(bool\s+)?-?[0-9.]+(e[+-]?[0-9]+)?\s*$/i.test(right) ? (left ?? part) : part
}

/**
 * Splits at every match of `separator` outside parentheses, brackets, braces
 * and quotes (at most `limit` times), dropping the separator itself.
 */
function splitTopLevel(
  text: string,
  separator: RegExp,
  limit = Number.POSITIVE_INFINITY,
): string[] {
  const parts: string[] = []
  let depth = 0
  let quote: string | null = null
  let start = 0
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string
    if (quote !== null) {
      if (char === '\\') index += 1
      else if (char === quote) quote = null
      continue
    }
    if (char === '"' || char === "'" || char === '`') quote = char
    else if ('([{'.includes(char)) depth += 1
    else if (')]}'.includes(char)) depth -= 1
    else if (depth === 0 && parts.length < limit && /[\s)]/.test(text[index - 1] ?? ' ')) {
      const match = separator.exec(text.slice(index))
      if (match !== null) {
        parts.push(text.slice(start, index))
        index += match[0].length - 1
        start = index + 1
      }
    }
  }
  parts.push(text.slice(start))
  return parts
}
