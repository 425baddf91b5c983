import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { LoadCommand } from './load-generator.js'
import { createLoadRunner, type LoadJob, type LoadResult } from './load-runner.js'

/** Where autocannon runs: a child process (default) or the benchmark's own process. */
export type LoadGeneratorMode = 'child' | 'inline'

export interface LoadGenerator {
  readonly mode: LoadGeneratorMode
  /** The process autocannon runs in. */
  readonly pid: number
  setTokens(name: string, tokens: readonly string[], etags?: readonly string[]): Promise<void>
  run(job: LoadJob): Promise<LoadResult>
  /** Ends the leg in progress early (its `run` promise then resolves). */
  stop(): Promise<void>
  close(): Promise<void>
}

type CommandBody = LoadCommand extends infer C
  ? C extends LoadCommand
    ? Omit<C, 'id'>
    : never
  : never

export async function startLoadGenerator(mode: LoadGeneratorMode): Promise<LoadGenerator> {
  if (mode === 'inline') {
    const runner = createLoadRunner()
    return {
      mode,
      pid: process.pid,
      setTokens: async (name, tokens, etags) => runner.setTokens(name, tokens, etags),
      run: (job) => runner.runJob(job),
      stop: async () => runner.stop(),
      close: async () => {},
    }
  }
  const child: ChildProcess = fork(fileURLToPath(new URL('./load-generator.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >()
  let nextId = 1
  let exited = false
  child.on('message', (message: { id: number; ok: boolean; result?: unknown; error?: string }) => {
    const waiter = pending.get(message.id)
    pending.delete(message.id)
    if (message.ok) waiter?.resolve(message.result)
    else waiter?.reject(new Error(`load generator: ${message.error}`))
  })
  child.on('exit', () => {
    exited = true
    for (const waiter of pending.values()) waiter.reject(new Error('the load generator exited'))
    pending.clear()
  })
  const send = (command: CommandBody): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error('the load generator exited'))
      const id = nextId++
      pending.set(id, { resolve, reject })
      child.send({ ...command, id })
    })
  return {
    mode,
    pid: child.pid ?? -1,
    async setTokens(name, tokens, etags) {
      await send({ type: 'tokens', name, tokens: [...tokens], ...(etags && { etags: [...etags] }) })
    },
    run: (job) => send({ type: 'run', job }) as Promise<LoadResult>,
    async stop() {
      await send({ type: 'stop' })
    },
    async close() {
      if (exited) return
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.disconnect()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await gone
      clearTimeout(timer)
    },
  }
}
