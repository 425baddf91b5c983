/** deploy/monitoring/ as the monitoring tests read it: the alerting rules. */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { RULES_FILE } from '../../deploy/monitoring/render-prometheusrule.js'

export const MONITORING_DIR = new URL('../../deploy/monitoring/', import.meta.url)
export const RULES_TEST_FILE = new URL('shell-data.rules.test.yaml', MONITORING_DIR)
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
