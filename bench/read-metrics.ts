/** A Prometheus text exposition, as series name with labels -> value. */
export type MetricSamples = ReadonlyMap<string, number>

export async function readMetrics(baseUrl: string): Promise<MetricSamples> {
  const response = await fetch(`${baseUrl}/metrics`)
  if (response.status !== 200) throw new Error(`GET /metrics: ${response.status}`)
  const samples = new Map<string, number>()
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const space = line.lastIndexOf(' ')
    samples.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return samples
}

/** One series: `sample(m, 'shell_token_cache_total', 'result="miss"')`; NaN when absent. */
export function sample(samples: MetricSamples, name: string, labels = ''): number {
  return samples.get(labels === '' ? name : `${name}{${labels}}`) ?? Number.NaN
}
