import type { Sql } from './connect.js'
import type { AppRevisions } from './read-snapshot-rows.js'

/**
 * Every app's revision (null for an app written around the triggers), as a
 * reload would read them: one small row per app, so it can be asked often.
 */
export async function readAppRevisions(sql: Sql): Promise<Map<string, string | null>> {
  const rows = await sql<{ appKey: string; revision: string | null }[]>`
    select a.app_key as "appKey", r.revision::text as revision
    from shell.apps a left join shell.app_revisions r using (app_key)`
  return new Map(rows.map((row) => [row.appKey, row.revision]))
}

/** True when a reload would read something: an app added, removed, changed, or without a revision. */
export function revisionsMoved(
  current: ReadonlyMap<string, string | null>,
  known: AppRevisions,
): boolean {
  if (current.size !== known.size) return true
  for (const [appKey, revision] of current) {
    if (revision === null || known.get(appKey) !== revision) return true
  }
  return false
}
