import { readAppDefinitions } from '../definitions/app-definitions.js'
import { toDefinitionsFile } from '../definitions/to-definitions-file.js'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'
import { type CommandContext, fail } from './command-context.js'
import { withDatabase } from './with-database.js'

export async function runExport(args: string[], context: CommandContext): Promise<number> {
  if (args.length > 1) return fail('export', 'takes at most one APP_KEY')
  const [appKey] = args
  if (appKey !== undefined && !new RegExp(APP_KEY_PATTERN).test(appKey)) {
    return fail('export', `"${appKey}" is not an app key (${APP_KEY_PATTERN})`)
  }
  const apps = await withDatabase(context, (sql) =>
    readAppDefinitions(sql, appKey === undefined ? undefined : [appKey]),
  )
  if (appKey !== undefined && apps.length === 0) return fail('export', `no app "${appKey}"`)
  process.stdout.write(`${JSON.stringify(toDefinitionsFile(apps), null, 2)}\n`)
  return 0
}
