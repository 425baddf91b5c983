import { type ColumnMap, ID_COLUMNS, INSTANT_COLUMNS } from '../domain/vocabulary.js'
import type postgres from './postgres-driver.js'

/**
 * The select list of a table's columns, each named by its field (`"t"."app_key" as "appKey"`),
 * built from identifiers, never strings, so domain/vocabulary.ts is the only spelling.
 */
export function selectColumns(
  sql: postgres.Sql | postgres.TransactionSql,
  columns: ColumnMap,
  tableAlias?: string,
): postgres.PendingQuery<postgres.Row[]>[] {
  return Object.entries(columns).map(([field, column], index) => {
    const qualified = sql(tableAlias === undefined ? column : `${tableAlias}.${column}`)
    const value = ID_COLUMNS.has(column)
      ? sql`${qualified}::text`
      : INSTANT_COLUMNS.has(column)
        ? sql`(extract(epoch from ${qualified}) * 1000)::float8`
        : sql`${qualified}`
    return index === 0 ? sql`${value} as ${sql(field)}` : sql`, ${value} as ${sql(field)}`
  })
}

/** A row's values by column, for `insert into t ${sql(values)}`: fields left out stay out. */
export function columnValues<Columns extends ColumnMap>(
  columns: Columns,
  fields: { readonly [Field in keyof Columns]?: unknown },
): Record<string, postgres.SerializableParameter> {
  const values: Record<string, postgres.SerializableParameter> = {}
  for (const [field, value] of Object.entries(fields)) {
    const column = columns[field]
    if (column === undefined) throw new TypeError(`no column for field "${field}"`)
    values[column] = value as postgres.SerializableParameter
  }
  return values
}
