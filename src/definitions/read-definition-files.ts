import { readFile } from 'node:fs/promises'
import { findDuplicateAppKeys } from './find-conflicts.js'
import type { AppDefinition, DefinitionProblem } from './types.js'
import { formatProblem, parseDefinitions } from './validate-definitions.js'

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
  const apps: AppDefinition[] = []
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
    if (result.ok) apps.push(...result.apps)
    else problems.push(...result.problems)
  }
  problems.push(...findDuplicateAppKeys(keysByFile))
  if (problems.length > 0) throw new DefinitionsError(problems)
  return apps
}
