/**
 * The PostgreSQL driver when a backend dies in the middle of a transaction.
 * postgres.js 3.4.9 then sends its own ROLLBACK on the closed connection,
 * which threw from a timer and ended the process; patches/postgres+3.4.9.patch
 * makes it a rejected query. Migrations, imports and every snapshot read run
 * in transactions, so this is the failure a database failover brings.
 */
import postgres from 'postgres'
import t from 'tap'
import { createTestDatabase } from '../helpers/database.js'

t.test('a transaction whose backend is terminated rejects; the pool goes on', async (t) => {
  const db = await createTestDatabase(t)
  const sql = postgres(db.url, { max: 2, onnotice: () => {} })
  t.teardown(() => sql.end({ timeout: 1 }))
  let pid: number | undefined
  const transaction = sql.begin(async (tx) => {
    const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`
    pid = row?.pid
    await tx`select pg_sleep(5)`
  })
  while (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
  await db.sql`select pg_terminate_backend(${pid})`
  await t.rejects(transaction, { code: /^(57P01|CONNECTION_CLOSED)$/ }, 'the caller gets the error')
  // The ROLLBACK's write runs from a timer after the rejection: give it its turn.
  await new Promise((resolve) => setTimeout(resolve, 50))
  const [row] = await sql<{ one: number }[]>`select 1 as one`
  t.equal(row?.one, 1, 'a new connection serves the next query')
})
