/**
 * The service's clients, all made by connectDatabase, keep the server's
 * notices out of the output: postgres.js prints them with console.log by
 * default, which would put lines that are not pino's JSON on stdout.
 */
import t from 'tap'
import { connectDatabase, type Sql } from '../../src/db/connect.js'
import postgres from '../../src/db/postgres-driver.js'
import { createTestDatabase } from '../helpers/database.js'

const db = await createTestDatabase(t)

/** What console.log was given while `sql` ran a statement that raises a NOTICE. */
async function printedDuringNotice(sql: Sql): Promise<unknown[][]> {
  const printed: unknown[][] = []
  const original = console.log
  console.log = (...args: unknown[]) => void printed.push(args)
  try {
    await sql`do $$ begin raise notice 'a notice from the server'; end $$`
  } finally {
    console.log = original
    await sql.end({ timeout: 5 })
  }
  return printed
}

t.test('a notice on a service connection prints nothing', async (t) => {
  t.same(await printedDuringNotice(connectDatabase(db.url, { max: 1 })), [])
})

t.test('the driver left to its default would print it', async (t) => {
  const printed = await printedDuringNotice(postgres(db.url, { max: 1 }))
  t.equal(printed.length, 1, 'so the test above can fail')
})
