import { withServersPinned } from './cpu-pinning.js'
import type { LoadGenerator, LoadResult } from './load-generator.js'
import { readCpuSeconds } from './process-resources.js'
import { passOrMiss, type ScenarioResult, type Side } from './scenario.js'
import type { BenchSettings } from './settings.js'

type Leg = LoadResult & { readonly cpuUsPerResponse: number }

/**
 * A B A B …: each side is warmed up once, then the two alternate in short
 * legs, so a machine whose speed drifts (a neighbour, thermal limits) moves
 * both sides of a pair alike. The ratio is the median of the pairs' ratios:
 * one pair caught by a slow spell does not move it, and the spread of the
 * pairs is shown beside it. req/s, p50 and p99 are means over a side's legs.
 */
export async function compareLegs(
  context: { settings: BenchSettings; load: LoadGenerator; log(line: string): void },
  a: Side,
  b: Side,
  minRatio: number | null,
): Promise<ScenarioResult> {
  const { settings, load } = context
  const legs: [Leg[], Leg[]] = [[], []]
  await withServersPinned([a.server.pid, b.server.pid], async () => {
    for (const side of [a, b]) {
      if (settings.warmupS > 0) await load.run(jobOf(side), settings.warmupS)
    }
    for (let pair = 1; pair <= settings.pairs; pair += 1) {
      legs[0].push(await runLeg(context, a, `A${pair}`))
      legs[1].push(await runLeg(context, b, `B${pair}`))
    }
  })
  const [sideA, sideB] = legs.map(summarize) as [Summary, Summary]
  const pairRatios = legs[0].map(
    (leg, index) => leg.requestsPerSecond / (legs[1][index] as Leg).requestsPerSecond,
  )
  const ratio = median(pairRatios)
  const errors = sideA.errors + sideB.errors
  const target =
    minRatio === null
      ? {}
      : {
          target: `>= ${minRatio.toFixed(2)}x`,
          result: passOrMiss(ratio >= minRatio && errors === 0),
        }
  const sorted = [...pairRatios].sort((x, y) => x - y)
  return {
    rows: [
      { scenario: a.label, ...sideA.cells, value: `${ratio.toFixed(2)}x`, ...target },
      { scenario: `  vs ${b.label}`, ...sideB.cells },
    ],
    notes: [
      `median of ${pairRatios.length} pairs ${ratio.toFixed(2)}x, from ${sorted[0]?.toFixed(2)} to ${sorted.at(-1)?.toFixed(2)} (${pairRatios.map((value) => value.toFixed(2)).join(', ')})${errors > 0 ? `; ${errors} errors or statuses >= 400, so no pass` : ''}`,
    ],
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

function jobOf(side: Side) {
  return { url: `${side.server.url}${side.path}`, tokens: side.tokens, headers: side.headers }
}

async function runLeg(
  { settings, load, log }: Parameters<typeof compareLegs>[0],
  side: Side,
  name: string,
): Promise<Leg> {
  const cpuBefore = await readCpuSeconds(side.server.pid)
  const result = await load.run(jobOf(side), settings.durationS)
  const cpuUsPerResponse =
    (1e6 * ((await readCpuSeconds(side.server.pid)) - cpuBefore)) / result.requests
  log(
    `${name} ${side.label}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, ${cpuUsPerResponse.toFixed(1)} µs CPU/response, ${result.errors} errors`,
  )
  return { ...result, cpuUsPerResponse }
}

type Summary = ReturnType<typeof summarize>

function summarize(legs: readonly Leg[]) {
  const mean = (pick: (leg: Leg) => number) =>
    legs.reduce((sum, leg) => sum + pick(leg), 0) / legs.length
  return {
    cells: {
      requestsPerSecond: mean((leg) => leg.requestsPerSecond),
      p50Ms: mean((leg) => leg.p50Ms),
      p99Ms: mean((leg) => leg.p99Ms),
      cpuUsPerResponse: mean((leg) => leg.cpuUsPerResponse),
    },
    errors: legs.reduce((sum, leg) => sum + leg.errors, 0),
  }
}
