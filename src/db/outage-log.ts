import type { Logger } from 'pino'

/**
 * While an outage lasts it is said again this seldom: a reader of the log sees that it still
 * lasts, and a retry every second does not fill it (two to three lines a second otherwise).
 */
const REMINDER_EVERY_MS = 60_000

/**
 * - `up`: the last attempt worked (or none failed yet).
 * - `down`: attempts fail since `since`; `attempts` counts them, `remindedAt` is the last line.
 */
type OutageState =
  | { readonly name: 'up' }
  | { readonly name: 'down'; readonly since: number; attempts: number; remindedAt: number }

export interface OutageLogOptions {
  readonly logger: Logger
  /** The warn line when attempts start failing, the reminder's, and the info line when one works. */
  readonly messages: { readonly down: string; readonly still: string; readonly back: string }
  /** The clock (ms); tests pass one of their own to see a minute pass. */
  readonly now?: () => number
}

export interface OutageLog {
  /** An attempt failed: said at warn the first time, then at most once a minute. */
  failed(fields: Readonly<Record<string, unknown>>): void
  /** An attempt worked: said once at info when attempts had failed. */
  succeeded(fields?: Readonly<Record<string, unknown>>): void
  isDown(): boolean
}

/**
 * One line per change of state for a task retried while the database is away, as replay-wait.ts
 * logs: unreachable (warn), still unreachable (a reminder a minute), back (info). The attempts
 * themselves are counted in metrics by the caller, not logged.
 */
export function createOutageLog(options: OutageLogOptions): OutageLog {
  const { logger, messages } = options
  const now = options.now ?? Date.now
  let state: OutageState = { name: 'up' }
  return {
    failed(fields) {
      const at = now()
      switch (state.name) {
        case 'up':
          state = { name: 'down', since: at, attempts: 1, remindedAt: at }
          logger.warn(fields, messages.down)
          return
        case 'down': {
          state.attempts += 1
          if (at - state.remindedAt < REMINDER_EVERY_MS) return
          state.remindedAt = at
          const downForS = Math.round((at - state.since) / 1000)
          logger.warn({ ...fields, attempts: state.attempts, downForS }, messages.still)
          return
        }
      }
    },
    succeeded(fields = {}) {
      switch (state.name) {
        case 'up':
          return
        case 'down': {
          const downForS = Math.round((now() - state.since) / 1000)
          logger.info({ ...fields, attempts: state.attempts, downForS }, messages.back)
          state = { name: 'up' }
          return
        }
      }
    },
    isDown: () => state.name === 'down',
  }
}
