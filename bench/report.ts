import { mkdir, writeFile } from 'node:fs/promises'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { timestampForFile } from './environment.js'
import type { ReportRow, ScenarioOutcome } from './outcome.js'
import { PACKAGE_ROOT } from './processes.js'

const HEADERS = [
  'scenario',
  'req/s',
  'p50 ms',
  'p99 ms',
  'CPU µs/resp',
  'ratio/value',
  'target',
  'result',
]

/** The table as aligned plain text (also valid inside a Markdown code block). */
export function formatTable(rows: readonly ReportRow[]): string {
  const cells = rows.map((row) => [
    row.scenario,
    row.requestsPerSecond === undefined
      ? ''
      : Math.round(row.requestsPerSecond).toLocaleString('en-US'),
    formatMs(row.p50Ms),
    formatMs(row.p99Ms),
    row.cpuUsPerResponse === undefined ? '' : row.cpuUsPerResponse.toFixed(1),
    row.value ?? '',
    row.target ?? '',
    row.result ?? '',
  ])
  const widths = HEADERS.map((header, column) =>
    Math.max(header.length, ...cells.map((line) => (line[column] ?? '').length)),
  )
  const render = (line: readonly string[]) =>
    line
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd()
  return [
    render(HEADERS),
    render(widths.map((width) => '-'.repeat(width))),
    ...cells.map(render),
  ].join('\n')
}

function formatMs(ms: number | undefined): string {
  if (ms === undefined || Number.isNaN(ms)) return ''
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1)
}

export function describeMachine() {
  const processors = cpus()
  return {
    cpus: processors.length,
    cpuModel: processors[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  }
}

/** Writes bench/results/latest.json and a timestamped copy; returns the two paths. */
export async function writeResults(document: Record<string, unknown>): Promise<string[]> {
  const dir = join(PACKAGE_ROOT, 'bench', 'results')
  await mkdir(dir, { recursive: true })
  const text = `${JSON.stringify(document, null, 2)}\n`
  const paths = [join(dir, 'latest.json'), join(dir, `${timestampForFile()}.json`)]
  for (const path of paths) await writeFile(path, text)
  return paths
}

export function collectRows(outcomes: readonly ScenarioOutcome[]): ReportRow[] {
  return outcomes.flatMap((outcome) => outcome.rows)
}
