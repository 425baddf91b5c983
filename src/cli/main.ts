#!/usr/bin/env node
/** `shell-data`: operator commands (docs/operations.md, "The command line"); results on stdout, problems on stderr. */
import pino from 'pino'
import { loadConfig } from '../config/config.js'
import { isEmbeddedPostgresInstalled } from '../embedded/embedded.js'
import type { CommandContext } from './command-context.js'
import { runExport } from './export-command.js'
import { runImport } from './import-command.js'
import { runMigrate } from './migrate-command.js'
import { runToken } from './token-command.js'

const USAGE = `usage:
  shell-data migrate                 apply sql/ migrations (through FEED_DATABASE_URL when set)
  shell-data import FILE...          apply app definitions (all files are checked before anything is written)
  shell-data import --dry-run FILE...
                                     check them and print, per app, what an import would change; write nothing
  shell-data export [APP_KEY]        print app definitions in the import format
  shell-data token [--sub S] [--roles a,b] [--ttl 1h]
                                     local mode only: print a token the local issuer signed`

const commands: Record<string, (args: string[], context: CommandContext) => Promise<number>> = {
  migrate: runMigrate,
  import: runImport,
  export: runExport,
  token: runToken,
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return name === undefined ? 1 : 0
  }
  const command = commands[name]
  if (command === undefined) {
    process.stderr.write(`shell-data: unknown command "${name}"\n${USAGE}\n`)
    return 1
  }
  // A ConfigError goes to the handler at the end, like any other failure: one line, exit 1.
  const config = loadConfig(process.env, { databaseUrlRequired: !isEmbeddedPostgresInstalled() })
  // The CLI speaks on stdout; its log (embedded PostgreSQL, migrations) goes to stderr and
  // stays at warn unless LOG_LEVEL asks for more, read as the service reads it (empty: unset).
  const level = process.env.LOG_LEVEL?.trim() ? config.logLevel : 'warn'
  const logger = pino({ level }, pino.destination(2))
  return command(args, { config, logger })
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`shell-data: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  },
)
