import { setTimeout as delay } from 'node:timers/promises'
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import type { AppRevisions } from '../db/read-snapshot-rows.js'
import {
  type FromListenerThread,
  type PrefetchedRead,
  restoreError,
  type ToListenerThread,
} from './listener-messages.js'
import type { ListenerThreadData } from './listener-thread.js'

export interface ListenHandlers {
  /** LISTEN is in place: the first time, and after every reconnect the driver makes. */
  onListen(): void
  onProbe(payload: string): void
  /** A change was committed; `prefetched` holds its rows when the thread could read them at once. */
  onChange(prefetched?: PrefetchedRead): void
  /** The connection is gone with its thread, which stopped (only a bug would make it). */
  onLost(): void
}

export interface ListeningConnection {
  /** Settles as postgres.js's `listen` does: once LISTEN is first in place, or with why it cannot be. */
  readonly listening: Promise<void>
  end(timeoutS: number): Promise<void>
}

export interface ListenerWorker {
  /** A dedicated LISTEN connection to `url`, held by the thread. */
  listen(url: string, handlers: ListenHandlers): ListeningConnection
  /** The revisions of the snapshot in service, numbered: the next change is read against them. */
  setKnown(generation: number, revisions: AppRevisions): void
  /**
   * Handles the thread's messages now, if there are any: called before each
   * request, so that under load a change is taken by the next request rather
   * than when the event loop next reaches the thread's port. The snapshot is
   * built in the microtasks that follow that request, and served from the
   * request after it. One atomic read when there is nothing.
   */
  takeMessages(): void
  close(): Promise<void>
}

/** How long the thread may take to end its connections before it is stopped. */
const CLOSE_TIMEOUT_MS = 5_000
/** Beyond a connection's own end timeout, how long its end is waited for. */
const END_GRACE_S = 2

interface OpenConnection {
  readonly handlers: ListenHandlers
  settleListening(error?: Error): void
  readonly ended: () => void
}

interface RunningThread {
  readonly worker: Worker
  readonly port: MessagePort
  readonly pending: Int32Array
  readonly exited: Promise<void>
}

/**
 * The main thread's side of the listener thread (listener-thread.ts). The
 * thread is started with the first connection and again after it stopped,
 * which only a bug would make it do; its connections are then gone, and the
 * change listener's probe notices and opens a new one.
 */
export function startListenerWorker(options: {
  readonly logger: Logger
  /** DATABASE_URL: the thread reads changes through it, as reloads do. */
  readonly databaseUrl: string
  /** Starts the thread; tests wrap it to stop a thread as a crash would. */
  readonly spawnThread?: typeof spawnListenerThread
}): ListenerWorker {
  const { logger, databaseUrl } = options
  const spawnThread = options.spawnThread ?? spawnListenerThread
  let thread: RunningThread | undefined
  let closed = false
  let nextId = 1
  const connections = new Map<number, OpenConnection>()
  let known: ToListenerThread | undefined
  // Stops the thread once it has ended its connections.
  let closing: () => void = () => {}

  function startThread(): RunningThread {
    const channel = new MessageChannel()
    const pending = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)
    const data: ListenerThreadData = { port: channel.port2, pending, databaseUrl }
    const worker = spawnThread(data, [channel.port2])
    const started: RunningThread = {
      worker,
      port: channel.port1,
      pending: new Int32Array(pending),
      exited: new Promise((resolve) => worker.once('exit', () => resolve())),
    }
    // The port keeps the process alive, as the listening connection did in the main
    // thread, until close() stops the thread.
    channel.port1.on('message', dispatch)
    worker.on('error', (error) => logger.error({ err: error }, 'the listener thread failed'))
    worker.on('exit', () => {
      if (thread === started) thread = undefined
      channel.port1.close()
      if (!closed) logger.warn('the listener thread stopped; its connections are gone')
      const lost = new Error('the listener thread stopped')
      const gone = [...connections.values()]
      connections.clear()
      for (const connection of gone) {
        connection.settleListening(lost)
        connection.ended()
        if (!closed) connection.handlers.onLost()
      }
    })
    if (known !== undefined) channel.port1.postMessage(known)
    return started
  }

  function post(message: ToListenerThread): void {
    thread?.port.postMessage(message)
  }

  function dispatch(message: FromListenerThread): void {
    if (message.type === 'closed') {
      closing()
      return
    }
    const connection = connections.get(message.id)
    if (connection === undefined) return
    switch (message.type) {
      case 'listening':
        connection.handlers.onListen()
        connection.settleListening()
        break
      case 'listen-failed':
        connection.settleListening(restoreError(message.error))
        break
      case 'probe':
        connection.handlers.onProbe(message.payload)
        break
      case 'change':
        connection.handlers.onChange(message.prefetched)
        break
      case 'ended':
        connections.delete(message.id)
        connection.settleListening(new Error('the listening connection was ended'))
        connection.ended()
        break
    }
  }

  return {
    listen(url, handlers) {
      if (closed) {
        const refused = Promise.reject(new Error('the listener worker is closed'))
        return { listening: refused, end: () => Promise.resolve() }
      }
      thread ??= startThread()
      const id = nextId++
      let settleListening: OpenConnection['settleListening'] = () => {}
      const listening = new Promise<void>((resolve, reject) => {
        settleListening = (error) => (error === undefined ? resolve() : reject(error))
      })
      let ended: () => void = () => {}
      const endedPromise = new Promise<void>((resolve) => {
        ended = resolve
      })
      connections.set(id, { handlers, settleListening, ended })
      post({ type: 'listen', id, url })
      return {
        listening,
        end(timeoutS) {
          if (connections.has(id)) post({ type: 'end', id, timeoutS })
          else ended()
          // A thread that does not answer (stuck, or still starting) must not hold up a close.
          return Promise.race([
            endedPromise,
            delay((timeoutS + END_GRACE_S) * 1000, undefined, { ref: false }),
          ])
        },
      }
    },
    setKnown(generation, revisions) {
      known = { type: 'known', generation, revisions }
      post(known)
    },
    takeMessages() {
      if (thread === undefined || Atomics.load(thread.pending, 0) === 0) return
      const { port, pending } = thread
      Atomics.store(pending, 0, 0)
      for (;;) {
        const received = receiveMessageOnPort(port)
        if (received === undefined) return
        dispatch(received.message as FromListenerThread)
      }
    },
    async close() {
      closed = true
      const running = thread
      if (running === undefined) return
      // The thread ends its connections first; one that does not answer within 5 s is stopped anyway.
      const timer = setTimeout(() => void running.worker.terminate(), CLOSE_TIMEOUT_MS)
      closing = () => void running.worker.terminate()
      post({ type: 'close' })
      await running.exited
      clearTimeout(timer)
    },
  }
}

/**
 * The thread runs listener-thread.js next to this file. From the TypeScript
 * sources (tests, the bench) tsx compiles it, but tsx's hooks do not reach a
 * worker on Node 20 (privatenumber/tsx#354): the thread registers them itself.
 */
export function spawnListenerThread(data: ListenerThreadData, transferList: MessagePort[]): Worker {
  const fromSources = import.meta.url.endsWith('.ts')
  const entry = new URL(`./listener-thread.${fromSources ? 'ts' : 'js'}`, import.meta.url)
  const options = { workerData: data, transferList }
  if (!fromSources) return new Worker(entry, options)
  const tsx = import.meta.resolve('tsx/esm/api')
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}
