import type { Logger } from 'pino'
import type { Config } from '../config/config.js'

/** What every command gets from `shell-data`: the checked configuration and a logger on stderr. */
export interface CommandContext {
  readonly config: Config
  readonly logger: Logger
}

/** Prints `shell-data <command>: <problem>` on stderr; returns the exit code, 1. */
export function fail(command: string, problem: string): number {
  process.stderr.write(`shell-data ${command}: ${problem}\n`)
  return 1
}
