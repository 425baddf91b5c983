import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'
import type { Sql } from '../db/connect.js'
import { type ApplyOutcome, applyAppDefinition, readAppDefinitions } from './app-definitions.js'
import { type AppPlan, planAppChange } from './plan-app-change.js'
import { readDefinitionFiles } from './read-definition-files.js'
import type { AppDefinition } from './types.js'

/** `seeds/` at the package root: loaded into an empty database at a local start. */
export const SEEDS_DIR = fileURLToPath(new URL('../../seeds/', import.meta.url))

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

/** What importDefinitions would do to each app, by the same plan, writing and locking nothing. */
export async function planImport(sql: Sql, apps: readonly AppDefinition[]): Promise<AppPlan[]> {
  const keys = apps.map((app) => app.key)
  const stored = await readAppDefinitions(sql, keys)
  const storedByKey = new Map(stored.map((app) => [app.key, app]))
  return apps.map((app) => planAppChange(storedByKey.get(app.key) ?? null, app))
}

/** A database with no app at all gets `seeds/`, so a first start shows something real. */
export async function seedEmptyDatabase(sql: Sql, logger: Logger): Promise<boolean> {
  const [row] = await sql<
    { empty: boolean }[]
  >`select not exists (select 1 from shell.apps) as empty`
  if (!row?.empty) return false
  const files = (await readdir(SEEDS_DIR)).filter((name) => name.endsWith('.json')).sort()
  const apps = await readDefinitionFiles(files.map((name) => join(SEEDS_DIR, name)))
  const results = await importDefinitions(sql, apps)
  logger.info({ apps: results.map((result) => result.key) }, 'empty database seeded from seeds/')
  return true
}
