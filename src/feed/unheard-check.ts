import type { Logger } from 'pino'
import type { Sql } from '../db/connect.js'
import { readAppRevisions, revisionsMoved } from '../db/read-app-revisions.js'
import type { AppRevisions } from '../db/read-snapshot-rows.js'
import { withReloadDeadline } from './reload-deadline.js'

/**
 * While no notification can be heard (LISTEN through a transaction pooler, a
 * listening connection being replaced), the feed reads every app's revision
 * this often and reloads when one moved, so that the snapshot still follows
 * the database, a few seconds late rather than never. One small row per app.
 */
export const UNHEARD_CHECK_INTERVAL_MS = 3_000

export interface UnheardCheckOptions {
  readonly sql: Sql
  readonly logger: Logger
  readonly intervalMs: number
  /** How long the read of the revisions may take. */
  readonly timeoutMs: number
  /** The revisions in service when a check is due (idle, and deaf to notifications); else undefined. */
  revisionsToCheck(): AppRevisions | undefined
  /** A revision moved since `known`: reload. */
  onMoved(): void
  /** Nothing moved since `known`: the snapshot read with it is as fresh as this check. */
  onUnchanged(known: AppRevisions): void
}

/** Starts the periodic check; `stop` ends it. A quiet no-op while changes can be heard. */
export function startUnheardCheck(options: UnheardCheckOptions): { stop(): void } {
  const { sql, logger, intervalMs, timeoutMs } = options
  let stopped = false
  let timer: NodeJS.Timeout | undefined

  async function check(): Promise<void> {
    const known = options.revisionsToCheck()
    if (known !== undefined) {
      try {
        const current = await withReloadDeadline(readAppRevisions(sql), timeoutMs)
        if (revisionsMoved(current, known)) options.onMoved()
        else options.onUnchanged(known)
      } catch (error) {
        // Reloads and the probe report an unreachable database; this check only waits for it.
        logger.debug({ err: error }, 'the revision check failed')
      }
    }
    if (!stopped) timer = setTimeout(() => void check(), intervalMs)
  }

  timer = setTimeout(() => void check(), intervalMs)
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
