import { parseArgs } from 'node:util'
import { importDefinitions, planImport } from '../definitions/import-definitions.js'
import type { AppPlan } from '../definitions/plan-app-change.js'
import { DefinitionsError, readDefinitionFiles } from '../definitions/read-definition-files.js'
import { type CommandContext, fail } from './command-context.js'
import { withDatabase } from './with-database.js'

export async function runImport(args: string[], context: CommandContext): Promise<number> {
  let dryRun: boolean
  let files: string[]
  try {
    const parsed = parseArgs({
      args,
      options: { 'dry-run': { type: 'boolean' } },
      allowPositionals: true,
    })
    dryRun = parsed.values['dry-run'] === true
    files = parsed.positionals
  } catch (error) {
    return fail('import', (error as Error).message)
  }
  if (files.length === 0) return fail('import', 'name one or more definition files')
  let apps: Awaited<ReturnType<typeof readDefinitionFiles>>
  try {
    apps = await readDefinitionFiles(files)
  } catch (error) {
    if (!(error instanceof DefinitionsError)) throw error
    return fail('import', `nothing written, ${error.message}`)
  }
  if (dryRun) {
    const plans = await withDatabase(context, (sql) => planImport(sql, apps))
    process.stdout.write(plans.map(formatPlan).join(''))
    return 0
  }
  const results = await withDatabase(context, (sql) => importDefinitions(sql, apps))
  for (const { key, outcome } of results) process.stdout.write(`${key}: ${outcome}\n`)
  return 0
}

/** `crm: change` and its differences indented under it, one per line. */
function formatPlan(plan: AppPlan): string {
  return [`${plan.key}: ${plan.action}`, ...plan.differences.map((line) => `  ${line}`)]
    .map((line) => `${line}\n`)
    .join('')
}
