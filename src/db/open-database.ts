import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'
import { ConfigError } from '../config.js'
import { startEmbeddedDatabase } from './embedded.js'

/** `.data/` at the package root, whether we run from `src/` (tsx) or `dist/`. */
export const LOCAL_DATA_DIR = fileURLToPath(new URL('../../.data/', import.meta.url))

export interface DatabaseLocation {
  readonly url: string
  /** True when the database is the embedded one under `.data/`. */
  readonly embedded: boolean
  /** Stops the embedded server when this process started it; nothing otherwise. */
  stop(): Promise<void>
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL under `.data/`. */
export async function locateDatabase(
  databaseUrl: string | null,
  logger: Logger,
): Promise<DatabaseLocation> {
  if (databaseUrl !== null) return { url: databaseUrl, embedded: false, stop: async () => {} }
  let server: Awaited<ReturnType<typeof startEmbeddedDatabase>>
  try {
    server = await startEmbeddedDatabase({ dataDir: LOCAL_DATA_DIR, logger })
  } catch (error) {
    // A production install (npm ci --omit=optional, as in the Docker image) has no PostgreSQL binaries.
    if (isMissingModule(error)) {
      throw new ConfigError(
        'DATABASE_URL',
        'is required: this installation has no embedded PostgreSQL',
      )
    }
    throw error
  }
  return { url: server.url, embedded: true, stop: () => server.stop() }
}

function isMissingModule(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
}
