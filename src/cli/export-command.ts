import { readAppDefinitions } from '../definitions/app-definitions.js'
import { toDefinitionsFile } from '../definitions/to-definitions-file.js'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'
import type { CommandContext } from './command-context.js'
import { withDatabase } from './with-database.js'

export async function runExport(args: string[], context: CommandContext): Promise<number> {
  if (args.length > 1) {
    process.stderr.write('shell-data export: takes at most one APP_KEY\n')
    return 1
  }
  const [appKey] = args
  if (appKey !== undefined && !new RegExp(APP_KEY_PATTERN).test(appKey)) {
    process.stderr.write(`shell-data export: "${appKey}" is not an app key (${APP_KEY_PATTERN})\n`)
    return 1
  }
  const apps = await withDatabase(context, (sql) => readAppDefinitions(sql, appKey))
  if (appKey !== undefined && apps.length === 0) {
    process.stderr.write(`shell-data export: no app "${appKey}"\n`)
    return 1
  }
  process.stdout.write(`${JSON.stringify(toDefinitionsFile(apps), null, 2)}\n`)
  return 0
}
