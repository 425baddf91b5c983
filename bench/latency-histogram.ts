/**
 * Response times at 10 µs resolution. autocannon's own histogram keeps whole
 * milliseconds and only 2xx responses, which turns a 0.6 ms p50 into "1" and
 * ignores every 304; this one records whatever the load generator reports.
 */
const BUCKET_MS = 0.01
/** 10 s in 10 µs buckets; slower responses land in the last bucket (the run's timeout is 10 s). */
const BUCKET_COUNT = 1_000_000

export interface LatencySummary {
  readonly p50Ms: number
  readonly p90Ms: number
  readonly p99Ms: number
  readonly meanMs: number
  readonly maxMs: number
}

/** Bucket index and count of every non-empty bucket: small enough to send between processes. */
export type SparseHistogram = [number, number][]

export class LatencyHistogram {
  private readonly counts = new Uint32Array(BUCKET_COUNT)
  private total = 0
  private sumMs = 0
  private maxMs = 0

  record(ms: number): void {
    const index = Math.min(BUCKET_COUNT - 1, Math.max(0, Math.floor(ms / BUCKET_MS)))
    this.counts[index] = (this.counts[index] ?? 0) + 1
    this.total += 1
    this.sumMs += ms
    if (ms > this.maxMs) this.maxMs = ms
  }

  get count(): number {
    return this.total
  }

  toSparse(): SparseHistogram {
    const sparse: SparseHistogram = []
    this.counts.forEach((count, index) => {
      if (count > 0) sparse.push([index, count])
    })
    return sparse
  }

  /** Sums histograms of several legs, so percentiles are over every response of a side. */
  static fromSparse(parts: readonly SparseHistogram[]): LatencyHistogram {
    const merged = new LatencyHistogram()
    for (const part of parts) {
      for (const [index, count] of part) {
        merged.counts[index] = (merged.counts[index] ?? 0) + count
        merged.total += count
        // Bucket midpoints: the mean of a merged histogram is exact to 5 µs.
        const ms = (index + 0.5) * BUCKET_MS
        merged.sumMs += ms * count
        if (ms > merged.maxMs) merged.maxMs = ms
      }
    }
    return merged
  }

  /** Upper edge of the bucket holding the p-th percentile: never optimistic. */
  percentile(p: number): number {
    if (this.total === 0) return Number.NaN
    const rank = Math.ceil((p / 100) * this.total)
    let seen = 0
    for (let index = 0; index < BUCKET_COUNT; index += 1) {
      seen += this.counts[index] ?? 0
      if (seen >= rank) return round((index + 1) * BUCKET_MS)
    }
    return round(this.maxMs)
  }

  summary(): LatencySummary {
    return {
      p50Ms: this.percentile(50),
      p90Ms: this.percentile(90),
      p99Ms: this.percentile(99),
      meanMs: this.total === 0 ? Number.NaN : round(this.sumMs / this.total),
      maxMs: round(this.maxMs),
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000
}
