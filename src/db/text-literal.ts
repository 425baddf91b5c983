import type postgres from './postgres-driver.js'

type Fragment = postgres.PendingQuery<postgres.Row[]>

/**
 * A text value written into the statement instead of sent as a parameter:
 * `convert_from(decode('<hex of its UTF-8>', 'hex'), 'UTF8')`. The only
 * characters taken from the value are hex digits, so no value can change
 * the statement, whatever it holds and whatever `standard_conforming_strings`
 * says.
 *
 * Why not a parameter: with `prepare: false` (needed behind a transaction
 * pooler) postgres.js sends a statement with parameters in two flights,
 * Parse/Describe first and Bind/Execute once the server has described the
 * parameters; a statement without any goes in one. Each flight waits a turn
 * of the event loop, which under load is several milliseconds. For the
 * reload that follows a commit, that turn is what shows.
 */
export function textLiteral(sql: postgres.Sql, text: string): Fragment {
  const hex = Buffer.from(text, 'utf8').toString('hex')
  return sql.unsafe(`convert_from(decode('${hex}', 'hex'), 'UTF8')`)
}
