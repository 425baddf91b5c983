import type { Worker } from 'node:worker_threads'
import pino from 'pino'
import t, { type Test } from 'tap'
import { readSnapshotRows } from '../../src/db/read-snapshot-rows.js'
import type { PrefetchedRead } from '../../src/feed/listener-messages.js'
import {
  type ListenerWorker,
  spawnListenerThread,
  startListenerWorker,
} from '../../src/feed/listener-worker.js'
import { createTestDatabase } from '../helpers/database.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { waitUntil } from '../helpers/wait.js'

const silent = pino({ level: 'silent' })

/** A listener thread on a fresh database with two apps, and what its handlers were told. */
async function startListening(t: Test) {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
  const worker = startListenerWorker({ logger: silent, databaseUrl: db.url })
  t.teardown(() => worker.close())
  const told = { listens: 0, probes: [] as string[], changes: [] as (PrefetchedRead | undefined)[] }
  const connection = worker.listen(db.url, {
    onListen: () => {
      told.listens += 1
    },
    onProbe: (payload) => told.probes.push(payload),
    onChange: (prefetched) => told.changes.push(prefetched),
    onLost: () => t.fail('the thread does not stop'),
  })
  await connection.listening
  return { db, worker, connection, told }
}

/** Handles the thread's messages as requests would: with no turn of the event loop. */
function takeMessagesUntil(worker: ListenerWorker, done: () => boolean, timeoutMs = 5_000) {
  const deadline = performance.now() + timeoutMs
  while (!done() && performance.now() < deadline) worker.takeMessages()
  return done()
}

t.test('a change arrives with its rows, read against the revisions in service', async (t) => {
  const { db, worker, told } = await startListening(t)
  t.equal(told.listens, 1, 'told once that LISTEN is in place')
  const known = (await readSnapshotRows(db.sql)).revisions
  worker.setKnown(7, known)
  // Let the thread take the revisions before the change.
  await db.sql`select 1`
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  await waitUntil(() => told.changes.length === 1, 'the change')
  const [prefetched] = told.changes
  t.equal(prefetched?.generation, 7, 'read against the revisions given')
  t.same(
    prefetched?.read.rows.apps.map((app) => [app.appKey, app.name]),
    [['crm', 'CRM 2']],
    'only the app that changed, as committed',
  )
  t.same([...(prefetched?.read.unchangedApps ?? [])], ['hr'])
  t.ok((prefetched?.readMs ?? -1) >= 0, 'with the time the read took')

  // The same revisions cannot say what changed since the first read: no rows this time.
  await db.sql`update shell.apps set name = 'HR 2' where app_key = 'hr'`
  await waitUntil(() => told.changes.length === 2, 'the second change')
  t.equal(told.changes[1], undefined, 'a change without rows: the feed reads it itself')
})

t.test('without revisions in service a change comes without rows', async (t) => {
  const { db, told } = await startListening(t)
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  await waitUntil(() => told.changes.length === 1, 'the change')
  t.equal(told.changes[0], undefined)
})

t.test('the notifications of one commit make one change', async (t) => {
  const { db, told } = await startListening(t)
  await db.sql.begin(async (tx) => {
    await tx`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
    await tx`insert into shell.branding (app_key, product_name) values ('crm', 'CRM')`
  })
  await waitUntil(() => told.changes.length === 1, 'the change')
  // A later commit is seen after it, so the first would have shown by now if it were separate.
  await db.sql`update shell.apps set name = 'HR 2' where app_key = 'hr'`
  await waitUntil(() => told.changes.length >= 2, 'the next change')
  t.equal(told.changes.length, 2)
})

t.test('probes go to onProbe, not onChange', async (t) => {
  const { db, told } = await startListening(t)
  await db.sql`select pg_notify('shell_changed', 'probe:test:1')`
  await waitUntil(() => told.probes.length === 1, 'the probe')
  t.same(told.probes, ['probe:test:1'])
  t.same(told.changes, [])
})

t.test('the main thread takes a change before its event loop turns', async (t) => {
  const { db, worker, told } = await startListening(t)
  worker.setKnown(1, (await readSnapshotRows(db.sql)).revisions)
  await db.sql`select 1`
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  let turned = false
  setImmediate(() => {
    turned = true
  })
  // From here the event loop is held: only takeMessages can bring the change in.
  t.ok(
    takeMessagesUntil(worker, () => told.changes.length === 1),
    'the change was taken synchronously',
  )
  t.equal(turned, false, 'without a turn of the event loop')
  t.equal(told.changes[0]?.read.rows.apps[0]?.name, 'CRM 2')
})

t.test('a listening connection that cannot connect fails with the driver error', async (t) => {
  const worker = startListenerWorker({ logger: silent, databaseUrl: 'postgres://x@127.0.0.1:1/x' })
  t.teardown(() => worker.close())
  const connection = worker.listen('postgres://nobody@127.0.0.1:1/none', {
    onListen: () => t.fail('not listening'),
    onProbe: () => {},
    onChange: () => {},
    onLost: () => {},
  })
  await t.rejects(connection.listening, { code: 'ECONNREFUSED' })
  await connection.end(0)
})

t.test('end stops the notifications; close ends the thread', async (t) => {
  const { db, worker, connection, told } = await startListening(t)
  await connection.end(1)
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  await db.sql`select pg_sleep(0.2)`
  t.same(told.changes, [], 'no change after end')
  const active = async () =>
    (
      await db.sql`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = 'shell-data-feed'`
    )[0]?.n
  await waitUntil(async () => (await active()) === 0, 'the listening connection closed')
  await worker.close()
  t.pass('closed')
})

t.test('a thread that dies is said so, and the next connection starts another', async (t) => {
  const db = await createTestDatabase(t)
  const lines: { level: number; msg: string }[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  const threads: Worker[] = []
  const worker = startListenerWorker({
    logger,
    databaseUrl: db.url,
    spawnThread(data, transferList) {
      const thread = spawnListenerThread(data, transferList)
      threads.push(thread)
      return thread
    },
  })
  t.teardown(() => worker.close())
  const changes: string[] = []
  const lost: string[] = []
  const listen = (name: string) =>
    worker.listen(db.url, {
      onListen: () => {},
      onProbe: () => {},
      onChange: () => changes.push(name),
      onLost: () => lost.push(name),
    })
  const first = listen('first')
  await first.listening
  await threads[0]?.terminate()
  await waitUntil(
    () => lines.some((line) => /listener thread stopped/.test(line.msg)),
    'the warning',
  )
  t.same(lost, ['first'], 'its connection is reported lost')
  await first.end(0)
  t.equal(threads.length, 1)

  const second = listen('second')
  await second.listening
  t.equal(threads.length, 2, 'a new thread for the new connection')
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
  await waitUntil(() => changes.length > 0, 'a change on the new connection')
  t.same([...new Set(changes)], ['second'])
})

/** A listener thread whose read connection goes through a proxy that can go silent. */
async function startWithProxiedReads(t: Test) {
  const db = await createTestDatabase(t)
  await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
  const target = new URL(db.url)
  const proxy = await startTcpProxy(target.hostname, Number(target.port))
  t.teardown(() => proxy.close())
  const worker = startListenerWorker({ logger: silent, databaseUrl: proxy.route(db.url) })
  t.teardown(() => worker.close())
  let generation = 0
  const setKnown = async () => {
    worker.setKnown(++generation, (await readSnapshotRows(db.sql)).revisions)
    await db.sql`select 1`
  }
  const listen = (told: (PrefetchedRead | undefined)[]) =>
    worker.listen(db.url, {
      onListen: () => {},
      onProbe: () => {},
      onChange: (prefetched) => told.push(prefetched),
      onLost: () => {},
    })
  return { db, proxy, setKnown, listen }
}

t.test('a read that hangs: the next change reads on a new connection', async (t) => {
  const { db, proxy, setKnown, listen } = await startWithProxiedReads(t)
  const told: (PrefetchedRead | undefined)[] = []
  await listen(told).listening
  await setKnown()
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  await waitUntil(() => told.length === 1, 'the first change')
  t.ok(told[0], 'read at once: the read connection is open')
  proxy.freeze()
  await setKnown()
  await db.sql`update shell.apps set name = 'CRM 3' where app_key = 'crm'`
  await waitUntil(() => told.length === 2, 'the change whose read hangs')
  t.equal(told[1], undefined, 'given up at the deadline: no rows')
  await setKnown()
  await db.sql`update shell.apps set name = 'CRM 4' where app_key = 'crm'`
  await waitUntil(() => told.length === 3, 'the change after')
  t.equal(
    told[2]?.read.rows.apps[0]?.name,
    'CRM 4',
    'read on a new connection, not behind the hung one',
  )
})

t.test('a change heard during a read reaches the connection that heard it', async (t) => {
  const { db, proxy, setKnown, listen } = await startWithProxiedReads(t)
  const toldFirst: (PrefetchedRead | undefined)[] = []
  const first = listen(toldFirst)
  await first.listening
  await setKnown()
  await db.sql`update shell.apps set name = 'CRM 2' where app_key = 'crm'`
  await waitUntil(() => toldFirst.length === 1, 'a first change opens the read connection')
  proxy.freeze()
  await setKnown()
  // Heard on the first connection; its read hangs until the deadline.
  await db.sql`update shell.apps set name = 'CRM 3' where app_key = 'crm'`
  await db.sql`select pg_sleep(0.2)`
  // The first connection is replaced, as after a silent probe, while that read hangs.
  const toldSecond: (PrefetchedRead | undefined)[] = []
  await listen(toldSecond).listening
  await first.end(0)
  await db.sql`update shell.apps set name = 'HR 2' where app_key = 'hr'`
  await waitUntil(() => toldSecond.length === 1, 'the change heard on the second connection')
  t.equal(toldSecond[0], undefined, 'without rows: the feed reloads for it')
})
