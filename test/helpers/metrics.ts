import type { Metric } from 'prom-client'

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
