import type { Metric } from 'prom-client'
import type { SnapshotSource } from '../../src/snapshot/types.js'

/** A metric's value for the given labels (all of them must match), 0 when it has no such series. */
export async function readMetric(
  metric: Metric,
  labels: Readonly<Record<string, string>> = {},
): Promise<number> {
  const { values } = await metric.get()
  const series = values.find((value) =>
    Object.entries(labels).every(([name, wanted]) => String(value.labels[name]) === wanted),
  )
  return series?.value ?? 0
}

/** Seconds since the source's snapshot last matched the database (shell_snapshot_age_seconds). */
export function snapshotAgeSeconds(source: SnapshotSource): number {
  const confirmedAt = source.confirmedAt()
  return confirmedAt === undefined
    ? Number.POSITIVE_INFINITY
    : (Date.now() - confirmedAt.getTime()) / 1000
}
