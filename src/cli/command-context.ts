import type { Logger } from 'pino'
import type { Config } from '../config/config.js'

/** What every command gets from `shell-data`: the checked configuration and a logger on stderr. */
export interface CommandContext {
  readonly config: Config
  readonly logger: Logger
}
