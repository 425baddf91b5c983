import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'
import type { AppDefinition, DefinitionProblem } from '../definitions/types.js'
import {
  findDuplicateAppKeys,
  formatProblem,
  parseDefinitions,
} from '../definitions/validate-definitions.js'
import { type ApplyOutcome, applyAppDefinition } from './app-definitions.js'
import type { Sql } from './connect.js'

export const SEEDS_DIR = fileURLToPath(new URL('../../seeds/', import.meta.url))

export class DefinitionsError extends Error {
  override name = 'DefinitionsError'
  constructor(readonly problems: readonly DefinitionProblem[]) {
    super(
      `${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${problems.map(formatProblem).join('\n')}`,
    )
  }
}

/** Reads and checks every file before anything is written; throws DefinitionsError with every problem. */
export async function readDefinitionFiles(files: readonly string[]): Promise<AppDefinition[]> {
  const problems: DefinitionProblem[] = []
  const parsed: { file: string; apps: readonly AppDefinition[] }[] = []
  // From every file that parsed as JSON, valid or not, so a clash is reported with the rest.
  const keysByFile: { file: string; appKeys: readonly (string | undefined)[] }[] = []
  for (const file of files) {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      problems.push({
        file,
        path: '$',
        message: `cannot be read: ${(error as NodeJS.ErrnoException).code ?? error}`,
      })
      continue
    }
    const result = parseDefinitions(text, file)
    keysByFile.push({ file, appKeys: result.appKeys })
    if (result.ok) parsed.push({ file, apps: result.apps })
    else problems.push(...result.problems)
  }
  problems.push(...findDuplicateAppKeys(keysByFile))
  if (problems.length > 0) throw new DefinitionsError(problems)
  return parsed.flatMap(({ apps }) => apps)
}

/** Applies each app in its own transaction; returns what happened to each. */
export async function importDefinitions(
  sql: Sql,
  apps: readonly AppDefinition[],
): Promise<{ key: string; outcome: ApplyOutcome }[]> {
  const results: { key: string; outcome: ApplyOutcome }[] = []
  for (const app of apps)
    results.push({ key: app.key, outcome: await applyAppDefinition(sql, app) })
  return results
}

/** A database with no app at all gets `seeds/`, so a first start shows something real. */
export async function seedEmptyDatabase(
  sql: Sql,
  logger: Logger,
  dir: string = SEEDS_DIR,
): Promise<boolean> {
  const [row] = await sql<
    { empty: boolean }[]
  >`select not exists (select 1 from shell.apps) as empty`
  if (!row?.empty) return false
  const files = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort()
  const apps = await readDefinitionFiles(files.map((name) => join(dir, name)))
  const results = await importDefinitions(sql, apps)
  logger.info({ apps: results.map((result) => result.key) }, 'empty database seeded from seeds/')
  return true
}
