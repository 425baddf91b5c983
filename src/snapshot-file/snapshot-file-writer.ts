import { createHash } from 'node:crypto'
import { mkdir, open, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import { datasetOf, historyOf, recordsOf } from '../snapshot/build.js'
import type { Snapshot, SnapshotSource } from '../snapshot/types.js'
import {
  encodeHeaderLine,
  encodeRecordLine,
  FILE_FORMAT,
  FILE_FORMAT_VERSION,
} from './file-format.js'

export interface SnapshotFileWriterOptions {
  readonly path: string
  readonly snapshots: Pick<SnapshotSource, 'onSwap' | 'origin'>
  /** `name sha256` of each migration this service applies (file-format.ts). */
  readonly migrations: readonly string[]
  /** package.json's version, named in the file. */
  readonly serviceVersion: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** Least time between two writes; a burst of reloads is written once it settles. */
  readonly minIntervalMs?: number
}

export interface SnapshotFileWriter {
  /** Writes what is still to be written, then stops. */
  close(): Promise<void>
}

/** About once a second at most (README, SNAPSHOT_FILE): a few milliseconds of work each time. */
const MIN_INTERVAL_MS = 1_000
/** Records hashed between two yields, and buffers per write call (within IOV_MAX). */
const RECORDS_PER_PIECE = 500

/**
 * Writes each snapshot read from the database to the file, replacing it atomically: written
 * beside it, flushed, renamed over it, the folder flushed, so that a process killed at any
 * moment leaves the previous file or the new one, whole. A window opening or closing changes no
 * data, so its snapshot is not written again.
 */
export function startSnapshotFileWriter(options: SnapshotFileWriterOptions): SnapshotFileWriter {
  const { path, logger, metrics } = options
  const minIntervalMs = options.minIntervalMs ?? MIN_INTERVAL_MS
  let wanted: Snapshot | undefined
  let written: Snapshot | undefined
  let writing: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined
  let lastWriteAt = Number.NEGATIVE_INFINITY
  let closed = false

  const unsubscribe = options.snapshots.onSwap((snapshot) => {
    // The file's own snapshot, served while the database is away, is in the file already.
    if (options.snapshots.origin() !== 'database') return
    wanted = snapshot
    schedule()
  })

  function schedule(): void {
    if (closed || writing !== undefined || timer !== undefined || wanted === undefined) return
    timer = setTimeout(writeWanted, Math.max(0, lastWriteAt + minIntervalMs - Date.now()))
  }

  function writeWanted(): void {
    timer = undefined
    const snapshot = wanted
    wanted = undefined
    if (snapshot === undefined || isWritten(snapshot)) return
    writing = writeSnapshot(snapshot).finally(() => {
      writing = undefined
      lastWriteAt = Date.now()
      schedule()
    })
  }

  /** Its data are in the file: the same read (a window's instant makes a snapshot of no new data). */
  function isWritten(snapshot: Snapshot): boolean {
    return snapshot.loadedAt.getTime() === written?.loadedAt.getTime()
  }

  async function writeSnapshot(snapshot: Snapshot): Promise<void> {
    const temporary = `${path}.${process.pid}.tmp`
    try {
      const lines = await encodeSnapshot(snapshot)
      await mkdir(dirname(path), { recursive: true })
      const file = await open(temporary, 'w', 0o600)
      try {
        for (let start = 0; start < lines.length; start += RECORDS_PER_PIECE) {
          await file.writev(lines.slice(start, start + RECORDS_PER_PIECE))
        }
        await file.sync()
      } finally {
        await file.close()
      }
      await rename(temporary, path)
      const folder = await open(dirname(path), 'r')
      try {
        await folder.sync()
      } finally {
        await folder.close()
      }
      written = snapshot
      metrics.snapshotFileWrites.inc({ result: 'success' })
      logger.debug({ file: path, apps: snapshot.appKeys.length }, 'snapshot file written')
    } catch (error) {
      metrics.snapshotFileWrites.inc({ result: 'error' })
      logger.warn({ file: path, err: error }, 'cannot write the snapshot file; serving on')
      await rm(temporary, { force: true }).catch(() => {})
    }
  }

  /** The file's bytes, as buffers: the header, then each app's line (its content not copied). */
  async function encodeSnapshot(snapshot: Snapshot): Promise<Buffer[]> {
    const records = recordsOf(snapshot)
    const body: Buffer[] = []
    const hash = createHash('sha256')
    let bytes = 0
    for (const appKey of snapshot.appKeys) {
      const record = records.get(appKey)
      if (record === undefined) continue
      for (const part of encodeRecordLine(record)) {
        body.push(part)
        hash.update(part)
        bytes += part.length
      }
      if (body.length % (3 * RECORDS_PER_PIECE) === 0) await yieldToEventLoop()
    }
    const header = encodeHeaderLine({
      format: FILE_FORMAT,
      version: FILE_FORMAT_VERSION,
      service: options.serviceVersion,
      migrations: options.migrations,
      dataset: datasetOf(snapshot) ?? null,
      history: historyOf(snapshot) ?? null,
      loadedAt: snapshot.loadedAt.toISOString(),
      apps: snapshot.appKeys.length,
      bytes,
      sha256: hash.digest('base64url'),
    })
    return [header, ...body]
  }

  return {
    async close() {
      closed = true
      unsubscribe()
      clearTimeout(timer)
      timer = undefined
      await writing
      const last = wanted
      wanted = undefined
      if (last !== undefined && !isWritten(last)) await writeSnapshot(last)
    },
  }
}
