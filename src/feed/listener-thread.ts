/**
 * The listening connection's thread (started by listener-worker.ts). Its
 * event loop has nothing else to do, so a notification is seen the moment it
 * arrives, and the rows of the change are read at once, while the main
 * thread, saturated by requests, would wait a turn of its event loop for
 * each: for the notification, then for the read's answer. The main thread
 * takes the result before its next request.
 */
import { type MessagePort, workerData } from 'node:worker_threads'
import { connectDatabase, type Sql } from '../db/connect.js'
import { readSnapshotRows } from '../db/read-snapshot-rows.js'
import {
  CHANGE_CHANNEL,
  carryError,
  type FromListenerThread,
  PROBE_PREFIX,
  type PrefetchedRead,
  type ToListenerThread,
} from './listener-messages.js'

export interface ListenerThreadData {
  /** Both ways: ToListenerThread in, FromListenerThread out. */
  readonly port: MessagePort
  /** One Int32, set to 1 after every message sent: the main thread checks it before each request. */
  readonly pending: SharedArrayBuffer
  /** DATABASE_URL: changes are read through it, as the main thread's reloads are. */
  readonly databaseUrl: string
}

/**
 * A change's read that takes longer than this is not waited for: the change
 * goes to the main thread without rows, and its own reload (with its own
 * deadline and retries) takes over. Far above the few milliseconds the read
 * takes; reached only when the database is in trouble.
 */
const PREFETCH_DEADLINE_MS = 2_000

function runListenerThread({ port, pending, databaseUrl }: ListenerThreadData): void {
  const pendingFlag = new Int32Array(pending)
  // Each listening connection, by the id the main thread gave it (undefined while being made).
  const clients = new Map<number, Sql | undefined>()
  // One connection, opened by the first change and closed after a quiet minute, as the pool's.
  let readSql: Sql | undefined
  // The revisions of the snapshot in service; each is read against once (see handleChange).
  let basis:
    | { generation: number; revisions: ReadonlyMap<string, string>; used: boolean }
    | undefined
  // A change's read in flight: a change that arrives meanwhile is sent after its result.
  let inFlight: { changedMeanwhileOn?: number } | undefined
  let changeQueued = false

  function send(message: FromListenerThread): void {
    port.postMessage(message)
    Atomics.store(pendingFlag, 0, 1)
  }

  async function listen(id: number, url: string): Promise<void> {
    // Taken before the client exists, so that a failure to create it is reported too.
    clients.set(id, undefined)
    try {
      // The pool's settings (no named statements, quiet notices, the driver's fixes checked);
      // postgres.js gives LISTEN a connection of its own that never idles out.
      const client = connectDatabase(url, { max: 1, applicationName: 'shell-data-feed' })
      clients.set(id, client)
      await client.listen(
        CHANGE_CHANNEL,
        (payload) => {
          if (!clients.has(id)) return
          if (payload.startsWith(PROBE_PREFIX)) send({ type: 'probe', id, payload })
          else queueChange(id)
        },
        // After the first LISTEN and after every reconnect postgres.js makes on its own.
        () => {
          if (clients.has(id)) send({ type: 'listening', id })
        },
      )
    } catch (error) {
      // A URL the driver cannot parse fails here too, before any client exists.
      if (clients.has(id)) send({ type: 'listen-failed', id, error: carryError(error) })
    }
  }

  /** The notifications of one COMMIT arrive in one packet: they make one change, in a microtask. */
  function queueChange(id: number): void {
    if (changeQueued) return
    changeQueued = true
    queueMicrotask(() => {
      changeQueued = false
      handleChange(id)
    })
  }

  /**
   * Reads the change against the revisions of the snapshot in service, once
   * per snapshot: until the main thread says which revisions it has now, a
   * second read could not say what changed since. Such changes, and those
   * that arrive during a read, go over without rows; the main thread reloads
   * for them as it always has.
   */
  function handleChange(id: number): void {
    if (inFlight !== undefined) {
      // Sent after the read, under the id of the connection that heard it: the one that
      // started the read may have been replaced meanwhile, and its messages are dropped.
      inFlight.changedMeanwhileOn = id
      return
    }
    if (basis === undefined || basis.used) {
      send({ type: 'change', id })
      return
    }
    basis.used = true
    const { generation, revisions } = basis
    const read: { changedMeanwhileOn?: number } = {}
    inFlight = read
    const startedAt = performance.now()
    readSql ??= connectDatabase(databaseUrl, { max: 1 })
    const connection = readSql
    const release = (prefetched?: PrefetchedRead) => {
      if (inFlight !== read) return
      inFlight = undefined
      clearTimeout(deadline)
      send({ type: 'change', id, ...(prefetched === undefined ? {} : { prefetched }) })
      if (read.changedMeanwhileOn !== undefined)
        send({ type: 'change', id: read.changedMeanwhileOn })
    }
    const deadline = setTimeout(() => {
      // A read this late waits on a connection gone silent, which TCP may hold for minutes;
      // every later read would queue behind it. The next change opens a new connection.
      if (readSql === connection) readSql = undefined
      void connection.end({ timeout: 0 })
      release()
    }, PREFETCH_DEADLINE_MS)
    deadline.unref()
    readSnapshotRows(connection, revisions).then(
      (rows) => release({ generation, read: rows, readMs: performance.now() - startedAt }),
      // The main thread's reload reads again, and reports the error if it persists.
      () => release(),
    )
  }

  async function end(id: number, timeoutS: number): Promise<void> {
    const client = clients.get(id)
    clients.delete(id)
    await client?.end({ timeout: timeoutS })
    send({ type: 'ended', id })
  }

  async function close(): Promise<void> {
    await Promise.all([...clients.keys()].map((id) => end(id, 0)))
    await readSql?.end({ timeout: 1 })
    send({ type: 'closed' })
  }

  port.on('message', (message: ToListenerThread) => {
    switch (message.type) {
      case 'listen':
        void listen(message.id, message.url)
        break
      case 'end':
        void end(message.id, message.timeoutS)
        break
      case 'known':
        basis = { generation: message.generation, revisions: message.revisions, used: false }
        break
      case 'close':
        void close()
        break
    }
  })
}

runListenerThread(workerData as ListenerThreadData)
