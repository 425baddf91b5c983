import { connectDatabase } from '../../src/db/connect.js'
import { buildSnapshot } from '../../test/helpers/build-snapshot.js'
import { readAllRows } from '../../test/helpers/read-rows.js'
import type { Scenario } from '../scenario.js'

/** Timed builds; one more before them warms the JIT. */
const RUNS = 5

/**
 * buildSnapshot on the large data set's rows, labels in two more locales
 * included, in the benchmark's process, apart from any load: what the full
 * reload after every LISTEN costs (the first, and each after a reconnect).
 * Variants are rendered on request, so this is all a reload builds up
 * front. Shown, with no target.
 */
export const snapshot: Scenario = {
  id: 'snapshot',
  run: async ({ env }) => {
    const sql = connectDatabase(env.largeDatabaseUrl, {
      max: 1,
      applicationName: 'shell-data-bench',
    })
    const readMs: number[] = []
    const buildMs: number[] = []
    let counts = ''
    try {
      for (let run = 0; run <= RUNS; run += 1) {
        const startedAt = performance.now()
        const { rows } = await readAllRows(sql)
        const readAt = performance.now()
        buildSnapshot(rows)
        if (run === 0) continue
        readMs.push(readAt - startedAt)
        buildMs.push(performance.now() - readAt)
        counts = `${rows.apps.length} apps / ${rows.menuItems.length} items / ${rows.labels.length} labels`
      }
    } finally {
      await sql.end()
    }
    const median = (values: number[]) =>
      values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
    const build = median(buildMs)
    return {
      rows: [
        {
          scenario: `snapshot build, ${counts} (median of ${RUNS})`,
          value: `${build.toFixed(0)} ms`,
        },
      ],
      notes: [`reading the rows took ${median(readMs).toFixed(0)} ms (median), not counted`],
    }
  },
}
