import { importDefinitions } from '../db/import-definitions.js'
import { DefinitionsError, readDefinitionFiles } from '../definitions/read-definition-files.js'
import type { CommandContext } from './command-context.js'
import { withDatabase } from './with-database.js'

export async function runImport(args: string[], context: CommandContext): Promise<number> {
  if (args.length === 0) {
    process.stderr.write('shell-data import: name one or more definition files\n')
    return 1
  }
  let apps: Awaited<ReturnType<typeof readDefinitionFiles>>
  try {
    apps = await readDefinitionFiles(args)
  } catch (error) {
    if (!(error instanceof DefinitionsError)) throw error
    process.stderr.write(`shell-data import: nothing written, ${error.message}\n`)
    return 1
  }
  const results = await withDatabase(context, (sql) => importDefinitions(sql, apps))
  for (const { key, outcome } of results) process.stdout.write(`${key}: ${outcome}\n`)
  return 0
}
