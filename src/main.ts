#!/usr/bin/env node
/**
 * The process: configuration, logger, the service, signals, shutdown.
 * `node dist/main.js` (npm start builds first).
 */
import pino from 'pino'
import { loadConfig } from './config/config.js'
import { ConfigError } from './config/variables.js'
import { EmbeddedPostgresError, isEmbeddedPostgresInstalled } from './embedded/embedded.js'
import { startService } from './service.js'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig(process.env, {
    databaseUrlRequired: !isEmbeddedPostgresInstalled(),
  })
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

let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting at once')
      process.exit(1)
    }
    stopping = true
    logger.info({ signal }, 'shutting down: draining requests')
    service.close().then(
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
