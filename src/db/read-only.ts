import type { Sql } from './connect.js'

/**
 * Why the database refuses writes (a hot standby, or `default_transaction_read_only`), or null.
 * Asked before migrating, so that an instance never tries to write to a standby.
 */
export async function findWhyReadOnly(sql: Sql): Promise<string | null> {
  const [row] = await sql<{ inRecovery: boolean; readOnly: boolean }[]>`
    select pg_is_in_recovery() as "inRecovery",
      current_setting('default_transaction_read_only')::boolean as "readOnly"`
  if (row?.inRecovery === true) return 'a hot standby (in recovery)'
  if (row?.readOnly === true) return 'read-only (default_transaction_read_only is on)'
  return null
}
