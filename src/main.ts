#!/usr/bin/env node
/** The process (`node dist/main.js`): configuration, logger, the service, signals, shutdown. */
import pino from 'pino'
import { loadConfig } from './config/config.js'
import { ConfigError } from './config/variables.js'
import { EmbeddedPostgresError, isEmbeddedPostgresInstalled } from './embedded/embedded.js'
import { type Service, startService } from './service.js'
import { createSignalClassifier, delayFor, type ShutdownSignal } from './shutdown-signals.js'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig(process.env, { databaseUrlRequired: !isEmbeddedPostgresInstalled() })
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  process.stderr.write(`shell-data: ${error.message}\n`)
  process.exit(1)
}

const logger = pino({ level: config.logLevel })

/**
 * The bound on a shutdown past its delay (docs/operations.md, "Deploys and shutdown"): the
 * drain and the database have deadlines of their own inside it; this catches what still hangs.
 */
const SHUTDOWN_BOUND_MS = 10_000

// Signals are handled from here on: one during the start stops what it started (the embedded
// database too) instead of leaving it to Node's default, which kills the process where it stands.
const starting = new AbortController()
let service: Service | undefined
const classifySignal = createSignalClassifier()
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => onSignal(signal))

try {
  service = await startService(config, logger, { signal: starting.signal })
} catch (error) {
  if (starting.signal.aborted) {
    logger.info('stopped during the start')
    process.exit(0)
  }
  // Both say what failed and what to do in one line; a stack trace would only bury it.
  if (error instanceof ConfigError || error instanceof EmbeddedPostgresError) {
    process.stderr.write(`shell-data: ${error.message}\n`)
  } else {
    logger.fatal({ err: error }, 'cannot start')
  }
  process.exit(1)
}

const running = service
running.started.catch(async (error: unknown) => {
  logger.fatal({ err: error }, 'cannot prepare the database')
  await running.close()
  process.exit(1)
})

function onSignal(signal: ShutdownSignal): void {
  const meaning = classifySignal(signal)
  if (meaning === 'copy') {
    logger.info(
      { signal },
      'the same signal again within a second: a copy (npm passes on what its process group got), not a second signal',
    )
    return
  }
  if (meaning === 'second') {
    logger.warn({ signal }, 'second signal: exiting at once')
    process.exit(1)
  }
  if (service === undefined) {
    // Nothing serves yet: the step under way ends (an embedded cluster being made is not cut
    // off, which would leave its server running), then the start releases what it made and
    // exits (above). No bound: a second signal is the way out.
    logger.info({ signal }, 'stopping the start')
    starting.abort()
    return
  }
  const delayMs = delayFor(signal, config.shutdownDelayS)
  logger.info({ signal, delayMs }, 'shutting down')
  setTimeout(() => {
    logger.error({ boundMs: delayMs + SHUTDOWN_BOUND_MS }, 'shutdown did not finish in time')
    process.exit(1)
  }, delayMs + SHUTDOWN_BOUND_MS).unref()
  service.shutdown({ delayMs }).then(
    () => {
      logger.info('stopped')
      process.exit(0)
    },
    (error: unknown) => {
      logger.error({ err: error }, 'shutdown failed')
      process.exit(1)
    },
  )
}
