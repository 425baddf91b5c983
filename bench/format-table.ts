import type { Row } from './scenario.js'

const COLUMNS: readonly [string, (row: Row) => string][] = [
  ['scenario', (row) => row.scenario],
  [
    'req/s',
    (row) =>
      formatNumber(row.requestsPerSecond, (value) => Math.round(value).toLocaleString('en-US')),
  ],
  ['p50 ms', (row) => formatNumber(row.p50Ms, formatMs)],
  ['p99 ms', (row) => formatNumber(row.p99Ms, formatMs)],
  ['CPU µs/resp', (row) => formatNumber(row.cpuUsPerResponse, (value) => value.toFixed(1))],
  ['ratio/value', (row) => row.value ?? ''],
  ['target', (row) => row.target ?? ''],
  ['result', (row) => row.result ?? ''],
]

/** The rows as aligned plain text, which also reads well in a Markdown code block. */
export function formatTable(rows: readonly Row[]): string {
  const lines = [
    COLUMNS.map(([title]) => title),
    ...rows.map((row) => COLUMNS.map(([, cell]) => cell(row))),
  ]
  const widths = COLUMNS.map((_, column) =>
    Math.max(...lines.map((line) => (line[column] ?? '').length)),
  )
  const render = (line: readonly string[]) =>
    line
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd()
  const [header = [], ...body] = lines
  return [
    render(header),
    render(widths.map((width) => '-'.repeat(width))),
    ...body.map(render),
  ].join('\n')
}

function formatNumber(value: number | undefined, format: (value: number) => string): string {
  return value === undefined || Number.isNaN(value) ? '' : format(value)
}

function formatMs(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1)
}
