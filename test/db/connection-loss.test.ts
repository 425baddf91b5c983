/**
 * The PostgreSQL driver that ships (src/vendor/postgres) on the failure paths
 * its fixes mend, each of which ended or wedged the process in postgres.js 3.4.9:
 * - a backend that dies in the middle of a transaction: the driver then sends
 *   its own ROLLBACK on the closed connection, which threw from a timer.
 *   Migrations, imports and every snapshot read run in transactions, so this
 *   is the failure a database failover brings;
 * - the array-types query every new connection runs first: its promise was
 *   dropped, so its failure (the connection killed at that moment, as a
 *   failover or a fast shutdown does) was an unhandled rejection;
 * - a transaction whose connection closed while its callback went on: the
 *   callback's later queries ran on the reconnected connection, outside it.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { createTestDatabase } from '../helpers/database.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { sleep, waitFor } from '../helpers/wait.js'

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
  // Watched from the start: the close may reach the driver before the answer to
  // pg_terminate_backend does, and a rejection nobody watches yet is an unhandled one.
  // 57P01 or CONNECTION_CLOSED, or a reset, depending on how the close reaches the socket.
  const failed = t.rejects(transaction, 'the caller gets an error')
  await waitFor(() => pid !== undefined, 'the transaction to start')
  await db.sql`select pg_terminate_backend(${pid ?? 0})`
  await failed
  // The ROLLBACK's write runs from a timer after the rejection: the scenario gives it its turn.
  await sleep(50)
  const [row] = await sql<{ one: number }[]>`select 1 as one`
  t.equal(row?.one, 1, 'a new connection serves the next query')
})

t.test(
  'a query of a transaction whose connection has closed fails, and the pool keeps the connection',
  async (t) => {
    const db = await createTestDatabase(t)
    // One connection: were it lost to the pool, the next query would wait forever.
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end({ timeout: 1 }))
    const transaction = sql.begin(async (tx) => {
      const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`
      await db.sql`select pg_terminate_backend(${row?.pid ?? 0})`
      // The scenario: the close reaches the driver before the transaction's next query.
      await sleep(100)
      // With a parameter: a statement not yet prepared on this connection.
      await tx`select ${'late'}::text as late`
    })
    await t.rejects(transaction, 'the transaction fails')
    const next = await Promise.race([sql<{ one: number }[]>`select 1 as one`, sleep(5_000)])
    t.same(next?.[0], { one: 1 }, 'the next query is answered')
  },
)

t.test(
  'a connection reset in the middle of a transaction leaves nothing stale for its next use',
  async (t) => {
    const db = await createTestDatabase(t)
    const target = new URL(db.url)
    const proxy = await startTcpProxy(target.hostname, Number(target.port))
    t.teardown(() => proxy.close())
    // One connection, used again after the reset: a query left over from the failed
    // transaction (its own ROLLBACK, written between the socket's error and its close)
    // would be taken as that next use's current query, and the pool would wait forever.
    const sql = postgres(proxy.route(db.url), { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end({ timeout: 1 }))
    for (let round = 0; round < 3; round += 1) {
      const transaction = sql.begin(async (tx) => {
        await tx`select pg_sleep(5)`
      })
      const failed = t.rejects(transaction, `round ${round}: the transaction fails`)
      await waitFor(
        async () =>
          (
            await db.sql`select 1 from pg_stat_activity
              where datname = ${db.name} and query = 'select pg_sleep(5)' and state = 'active'`
          ).length === 1,
        'the transaction sleeping in the database',
      )
      proxy.cut()
      await failed
      const next = await Promise.race([sql<{ one: number }[]>`select 1 as one`, sleep(5_000)])
      t.same(next?.[0], { one: 1 }, `round ${round}: then a query`)
    }
  },
)

t.test('the error that ended a connection is not handed to its next query', async (t) => {
  const db = await createTestDatabase(t)
  // One connection, so the next query is the next life of the very same connection.
  const sql = postgres(db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end({ timeout: 1 }))
  for (let round = 0; round < 3; round += 1) {
    // execute(): a postgres.js query starts when awaited, and this one must run meanwhile.
    const sleeping = sql`select pg_sleep(5)`.execute()
    sleeping.catch(() => {})
    // The backend that runs it, found by its query text once it runs.
    await waitFor(
      async () =>
        (
          await db.sql`
            select pg_terminate_backend(pid) from pg_stat_activity
            where datname = ${db.name} and query = 'select pg_sleep(5)' and state = 'active'`
        ).length === 1,
      `round ${round}: the backend running the query terminated`,
    )
    await t.rejects(sleeping, `round ${round}: the query that was running fails`)
    // The scenario: the next query comes after the close, not between the error and it.
    await sleep(200)
    const [next] = await sql<{ one: number }[]>`select 1 as one`
    t.equal(next?.one, 1, `round ${round}: the next query is answered`)
  }
})

t.test(
  'a failed array-types lookup on a new connection is not thrown from the driver',
  async (t) => {
    const db = await createTestDatabase(t)
    // A role that may not read pg_type: the lookup fails on a live connection, every time.
    const role = `shell_test_${randomBytes(6).toString('hex')}`
    await db.sql.unsafe(`create role ${role} login password 'test'`)
    await db.sql.unsafe('revoke select on pg_catalog.pg_type from public')
    const url = new URL(db.url)
    url.username = role
    url.password = 'test'
    const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
    try {
      // The driver hands the lookup's error to the query that opened the connection.
      await t.rejects(sql`select 1 as one`, { code: '42501' }, 'the caller gets the error')
      // The scenario: the failed lookup's promise settles before the next query.
      await sleep(50)
      const [row] = await sql<{ two: number }[]>`select 2 as two`
      t.equal(row?.two, 2, 'and the connection serves the next query')
    } finally {
      await sql.end({ timeout: 1 })
      await db.sql.unsafe(`drop role ${role}`)
    }
  },
)

t.test(
  'a transaction whose connection closed runs nothing more, even once the connection is back',
  async (t) => {
    const db = await createTestDatabase(t)
    await db.sql`create table public.late_writes (note text)`
    // One connection, so the pool hands the same one to the next user once it reconnects.
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end({ timeout: 1 }))
    let resume: () => void = () => {}
    const paused = new Promise<void>((resolve) => {
      resume = resolve
    })
    let late: Promise<unknown> | undefined
    const transaction = sql.begin(async (tx) => {
      const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`
      await db.sql`select pg_terminate_backend(${row?.pid ?? 0})`
      // The callback waits on something else while its connection dies and comes back.
      await paused
      late = tx`insert into public.late_writes values ('written after the close')`.execute()
      late.catch(() => {})
      await late
    })
    await t.rejects(transaction, 'the transaction fails when its backend goes')
    const [next] = await sql<{ one: number }[]>`select 1 as one`
    t.equal(next?.one, 1, 'the connection serves the next user')
    resume()
    await waitFor(() => late !== undefined, 'the dead transaction to try its late query')
    await t.rejects(late ?? Promise.resolve(), 'a query of the dead transaction is refused')
    const written = await db.sql`select note from public.late_writes`
    t.same(written, [], 'and never reaches the connection outside its transaction')
  },
)
