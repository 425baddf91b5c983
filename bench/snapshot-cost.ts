import { connectDatabase } from '../src/db/connect.js'
import { readSnapshotRows } from '../src/db/read-snapshot-rows.js'
import { buildSnapshot } from '../src/snapshot/build.js'
import type { BenchUser } from './issuer.js'

export interface SnapshotBuildCost {
  readonly rows: { apps: number; menuItems: number; grants: number }
  /** readSnapshotRows: the REPEATABLE READ transaction and its four queries. */
  readonly readMs: { median: number; min: number }
  /** buildSnapshot alone, rows already in memory. */
  readonly buildMs: { median: number; min: number; max: number }
  /** Rendering the variants of one app for every caller's role set (done lazily after each swap). */
  readonly variantsMs: { appKey: string; callers: number; distinctVariants: number; ms: number }
}

/**
 * Times the snapshot build in this process, apart from the service: the
 * reload the service reports (shell_snapshot_reload_duration_seconds) is the
 * read plus the build, under whatever load the service has.
 */
export async function measureSnapshotBuild(
  databaseUrl: string,
  runs: number,
  appKey: string,
  users: readonly BenchUser[],
): Promise<SnapshotBuildCost> {
  const sql = connectDatabase(databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  try {
    const readMs: number[] = []
    // Full reads (no known revisions): the first load's cost and a full build's input.
    let { rows } = await readSnapshotRows(sql)
    for (let run = 0; run < runs; run += 1) {
      const startedAt = performance.now()
      ;({ rows } = await readSnapshotRows(sql))
      readMs.push(performance.now() - startedAt)
    }
    const buildMs: number[] = []
    let snapshot = buildSnapshot(rows)
    for (let run = 0; run < runs; run += 1) {
      const startedAt = performance.now()
      snapshot = buildSnapshot(rows)
      buildMs.push(performance.now() - startedAt)
    }
    const view = snapshot.app(appKey)
    if (view === undefined) throw new Error(`no app ${appKey} in the snapshot`)
    const variantsStartedAt = performance.now()
    const tags = new Set<string>()
    for (const user of users) tags.add(view.variant(user.roles, view.defaultLocale).tag)
    const variantsMs = performance.now() - variantsStartedAt
    return {
      rows: {
        apps: rows.apps.length,
        menuItems: rows.menuItems.length,
        grants: rows.grants.length,
      },
      readMs: { median: median(readMs), min: round(Math.min(...readMs)) },
      buildMs: {
        median: median(buildMs),
        min: round(Math.min(...buildMs)),
        max: round(Math.max(...buildMs)),
      },
      variantsMs: {
        appKey,
        callers: users.length,
        distinctVariants: tags.size,
        ms: round(variantsMs),
      },
    }
  } finally {
    await sql.end()
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return round(sorted[Math.floor(sorted.length / 2)] ?? Number.NaN)
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10
}
