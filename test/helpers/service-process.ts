import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { CONFIG_VARIABLES } from '../../src/config/variables.js'

const execFileAsync = promisify(execFile)

/** The package root: the processes run from there, as `npm start` would. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Settings a developer's shell may hold that would change what the spawned process does. */
const INHERITED_SETTINGS: ReadonlySet<string> = new Set(CONFIG_VARIABLES)

/** process.env without any of the service's settings, plus the given ones. */
export function serviceEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env))
    if (!INHERITED_SETTINGS.has(name)) env[name] = value
  return { ...env, ...settings }
}

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** `node --import tsx src/main.ts` as a child, its pino lines parsed as they come. */
export interface ServiceProcess {
  readonly child: ChildProcess
  /** Every stdout line, raw. */
  readonly lines: string[]
  stderr(): string
  /** Resolves with the first log line (past or future) the predicate accepts. */
  waitForLine(
    predicate: (line: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>
  readonly exited: Promise<Exit>
  hasExited(): boolean
}

/** `cwd`: the package the process runs from (a copy of it, for tests that need a clone of their own). */
export function spawnService(
  t: { teardown(fn: () => unknown): void },
  settings: Record<string, string>,
  cwd: string = PACKAGE_ROOT,
): ServiceProcess {
  return spawnNode(t, ['--import', 'tsx', 'src/main.ts'], settings, cwd)
}

function spawnNode(
  t: { teardown(fn: () => unknown): void },
  args: string[],
  settings: Record<string, string>,
  cwd: string,
): ServiceProcess {
  const child = spawn(process.execPath, args, {
    cwd,
    env: serviceEnv(settings),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  let stderr = ''
  let pending = ''
  const waiters = new Set<() => void>()
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk
    const complete = pending.split('\n')
    pending = complete.pop() ?? ''
    lines.push(...complete.filter((line) => line !== ''))
    for (const wake of waiters) wake()
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  let exitedNow = false
  const exited = new Promise<Exit>((resolve) => {
    child.on('exit', (code, signal) => {
      exitedNow = true
      for (const wake of waiters) wake()
      resolve({ code, signal })
    })
  })
  t.teardown(async () => {
    if (!exitedNow) {
      child.kill('SIGKILL')
      await exited
    }
  })

  function findLine(
    predicate: (line: Record<string, unknown>) => boolean,
  ): Record<string, unknown> | undefined {
    for (const line of lines) {
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        continue
      }
      if (typeof parsed === 'object' && parsed !== null) {
        const record = parsed as Record<string, unknown>
        if (predicate(record)) return record
      }
    }
    return undefined
  }

  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    hasExited: () => exitedNow,
    waitForLine(predicate, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = findLine(predicate)
          if (found !== undefined) return finish(() => resolve(found))
          if (exitedNow)
            return finish(() =>
              reject(new Error(`the process exited before ${what}; stderr: ${stderr}`)),
            )
        }
        const timer = setTimeout(
          () =>
            finish(() =>
              reject(new Error(`timed out waiting for ${what}; stdout: ${lines.join('\n')}`)),
            ),
          timeoutMs,
        )
        const finish = (settle: () => void) => {
          clearTimeout(timer)
          waiters.delete(check)
          settle()
        }
        waiters.add(check)
        check()
      })
    },
  }
}

export interface CommandResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs a node entry point to completion (the CLI, a start that must fail). */
export async function runNode(
  entry: string,
  args: string[],
  settings: Record<string, string>,
  cwd: string = PACKAGE_ROOT,
): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', entry, ...args],
      { cwd, env: serviceEnv(settings), timeout: 60_000 },
    )
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string }
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr }
  }
}
