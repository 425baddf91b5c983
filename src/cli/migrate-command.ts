import { migrateDatabase } from '../db/migrate.js'
import { type CommandContext, fail } from './command-context.js'
import { withDatabase } from './with-database.js'

export async function runMigrate(args: string[], context: CommandContext): Promise<number> {
  if (args.length > 0) return fail('migrate', 'takes no arguments')
  const result = await withDatabase(
    context,
    (sql) => migrateDatabase(sql, { logger: context.logger }),
    { primary: true },
  )
  for (const name of result.applied) process.stdout.write(`applied ${name}\n`)
  process.stdout.write(
    result.applied.length === 0
      ? 'schema is up to date\n'
      : `${result.applied.length} migration(s) applied\n`,
  )
  return 0
}
