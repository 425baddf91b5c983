import type { Row } from './scenario.js'

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

/** The rows as aligned plain text, which also reads well in a Markdown code block. */
export function formatTable(rows: readonly Row[]): string {
  const lines = rows.map((row) => [
    row.scenario,
    row.requestsPerSecond === undefined
      ? ''
      : Math.round(row.requestsPerSecond).toLocaleString('en-US'),
    formatMs(row.p50Ms),
    formatMs(row.p99Ms),
    row.cpuUsPerResponse?.toFixed(1) ?? '',
    row.value ?? '',
    row.target ?? '',
    row.result ?? '',
  ])
  const widths = HEADERS.map((header, column) =>
    Math.max(header.length, ...lines.map((line) => line[column]?.length ?? 0)),
  )
  const render = (line: readonly string[]) =>
    line
      .map((cell, column) => {
        const width = widths[column] ?? 0
        return column === 0 ? cell.padEnd(width) : cell.padStart(width)
      })
      .join('  ')
      .trimEnd()
  return [HEADERS, widths.map((width) => '-'.repeat(width)), ...lines].map(render).join('\n')
}

function formatMs(ms: number | undefined): string {
  if (ms === undefined) return ''
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1)
}
