import type { LoadGenerator, LoadResult } from './load-generator.js'
import { readCpuSeconds } from './process-resources.js'
import { passOrMiss, type ScenarioResult, type Side } from './scenario.js'
import type { BenchSettings } from './settings.js'

type Leg = LoadResult & { readonly cpuUsPerResponse: number }

/**
 * A B A B …: both sides are measured within seconds of each other, so a
 * machine that slows down (a neighbour, thermal limits) moves both sides,
 * not the ratio. req/s, p50 and p99 are means over a side's legs.
 */
export async function compareLegs(
  context: { settings: BenchSettings; load: LoadGenerator; log(line: string): void },
  a: Side,
  b: Side,
  minRatio: number | null,
): Promise<ScenarioResult> {
  const legs: [Leg[], Leg[]] = [[], []]
  for (let pair = 1; pair <= context.settings.pairs; pair += 1) {
    legs[0].push(await runLeg(context, a, `A${pair}`))
    legs[1].push(await runLeg(context, b, `B${pair}`))
  }
  const [sideA, sideB] = legs.map(summarize) as [Summary, Summary]
  const ratio = sideA.cells.requestsPerSecond / sideB.cells.requestsPerSecond
  const errors = sideA.errors + sideB.errors
  const pairRatios = legs[0].map(
    (leg, index) => leg.requestsPerSecond / (legs[1][index] as Leg).requestsPerSecond,
  )
  const target =
    minRatio === null
      ? {}
      : {
          target: `>= ${minRatio.toFixed(2)}x`,
          result: passOrMiss(ratio >= minRatio && errors === 0),
        }
  return {
    rows: [
      { scenario: a.label, ...sideA.cells, value: `${ratio.toFixed(2)}x`, ...target },
      { scenario: `  vs ${b.label}`, ...sideB.cells },
    ],
    notes: [
      `ratio per pair ${pairRatios.map((value) => value.toFixed(2)).join(', ')}${errors > 0 ? `; ${errors} errors or statuses >= 400, so no pass` : ''}`,
    ],
  }
}

async function runLeg(
  { settings, load, log }: Parameters<typeof compareLegs>[0],
  side: Side,
  name: string,
): Promise<Leg> {
  const job = { url: `${side.server.url}${side.path}`, tokens: side.tokens, headers: side.headers }
  const undo = await side.prepare?.()
  try {
    if (settings.warmupS > 0) await load.run(job, settings.warmupS)
    const cpuBefore = await readCpuSeconds(side.server.pid)
    const result = await load.run(job, settings.durationS)
    const cpuUsPerResponse =
      (1e6 * ((await readCpuSeconds(side.server.pid)) - cpuBefore)) / result.requests
    log(
      `${name} ${side.label}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, ${cpuUsPerResponse.toFixed(1)} µs CPU/response, ${result.errors} errors`,
    )
    return { ...result, cpuUsPerResponse }
  } finally {
    await undo?.()
  }
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
