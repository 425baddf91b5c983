import type { Sql } from './connect.js'

/**
 * Why the database refuses writes, or null when it takes them: a hot
 * standby (in recovery), or `default_transaction_read_only` set for the
 * role or database. Asked before migrating, so that an instance pointed at
 * a standby never tries to write there.
 */
export async function findWhyReadOnly(sql: Sql): Promise<string | null> {
  const [row] = await sql<{ inRecovery: boolean; readOnly: boolean }[]>`
    select pg_is_in_recovery() as "inRecovery",
      current_setting('default_transaction_read_only')::boolean as "readOnly"`
  if (row?.inRecovery === true) return 'a hot standby (in recovery)'
  if (row?.readOnly === true) return 'read-only (default_transaction_read_only is on)'
  return null
}
