import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'
import { startEmbeddedDatabase } from './embedded.js'

/** `.data/` at the package root, whether we run from `src/` (tsx) or `dist/`. */
export const LOCAL_DATA_DIR = fileURLToPath(new URL('../../.data/', import.meta.url))

export type DatabaseLocation = Awaited<ReturnType<typeof locateDatabase>>

/** DATABASE_URL when set; otherwise the embedded PostgreSQL under `.data/`. */
export async function locateDatabase(databaseUrl: string | null, logger: Logger) {
  if (databaseUrl !== null) return { url: databaseUrl, embedded: false, stop: async () => {} }
  const server = await startEmbeddedDatabase({ dataDir: LOCAL_DATA_DIR, logger })
  return { url: server.url, embedded: true, stop: () => server.stop() }
}
