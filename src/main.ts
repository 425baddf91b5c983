#!/usr/bin/env node
/** The process (`node dist/main.js`): configuration, logger, the service, signals, shutdown. */
import pino from 'pino'
import { loadConfig } from './config/config.js'
import { ConfigError } from './config/variables.js'
import { EmbeddedPostgresError, isEmbeddedPostgresInstalled } from './embedded/embedded.js'
import { startService } from './service.js'
import { createSignalClassifier, delayFor } from './shutdown-signals.js'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig(process.env, { databaseUrlRequired: !isEmbeddedPostgresInstalled() })
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  process.stderr.write(`shell-data: ${error.message}\n`)
  process.exit(1)
}

const logger = pino({ level: config.logLevel })

let service: Awaited<ReturnType<typeof startService>>
try {
  service = await startService(config, logger)
} catch (error) {
  // Both say what failed and what to do in one line; a stack trace would only bury it.
  if (error instanceof ConfigError || error instanceof EmbeddedPostgresError) {
    process.stderr.write(`shell-data: ${error.message}\n`)
  } else {
    logger.fatal({ err: error }, 'cannot start')
  }
  process.exit(1)
}

service.started.catch(async (error: unknown) => {
  logger.fatal({ err: error }, 'cannot prepare the database')
  await service.close()
  process.exit(1)
})

/**
 * The bound on a shutdown past its delay (docs/operations.md, "Deploys and shutdown"): the
 * drain and the database have deadlines of their own inside it; this catches what still hangs.
 */
const SHUTDOWN_BOUND_MS = 10_000

const classifySignal = createSignalClassifier()
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
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
  })
}
