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
