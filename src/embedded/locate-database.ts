import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'
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
  const server = await startEmbeddedDatabase({ dataDir: LOCAL_DATA_DIR, logger })
  return { url: server.url, embedded: true, stop: () => server.stop() }
}
