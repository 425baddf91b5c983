import { createHash, type Hash, randomBytes } from 'node:crypto'
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import { datasetOf, historyOf, recordsOf } from '../snapshot/build.js'
import type { Snapshot, SnapshotSource } from '../snapshot/types.js'
import {
  encodeChecksumLine,
  encodeJsonLine,
  encodeRecordLine,
  FILE_FORMAT,
  FILE_FORMAT_VERSION,
} from './file-format.js'

export interface SnapshotFileWriterOptions {
  readonly path: string
  readonly snapshots: Pick<SnapshotSource, 'onSwap' | 'origin' | 'current' | 'confirmedAt'>
  readonly migrations: readonly string[]
  readonly serviceVersion: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** Least time between two writes; a burst of reloads is written once it settles. */
  readonly minIntervalMs?: number
  readonly confirmIntervalMs?: number
}

export interface SnapshotFileWriter {
  /** Writes what is still to be written, its latest confirmation too, then stops. */
  close(): Promise<void>
}

/** About once a second at most (README, SNAPSHOT_FILE): a few milliseconds of work each time. */
const MIN_INTERVAL_MS = 1_000
/**
 * The contract's "at least once a minute". Each costs a rewrite of the file from its content as
 * held in memory, not encoded nor hashed again (docs/operations.md, "The snapshot file").
 */
const CONFIRM_INTERVAL_MS = 60_000
/** Records hashed between two yields, and buffers per write call (within IOV_MAX). */
const RECORDS_PER_PIECE = 500

/** What the file holds: its snapshot, the bytes before the confirmation, their hash (not digested). */
interface WrittenContent {
  readonly snapshot: Snapshot
  readonly parts: readonly Buffer[]
  readonly hashed: Hash
  readonly confirmedAtMs: number
}

/**
 * Writes each snapshot read from the database, and while it does not change its newer
 * confirmations, atomically: beside the file under a new name (never through a link), flushed,
 * renamed over it, the folder flushed, so a process killed at any moment leaves one file whole.
 */
export function startSnapshotFileWriter(options: SnapshotFileWriterOptions): SnapshotFileWriter {
  const { path, logger, metrics, snapshots } = options
  const minIntervalMs = options.minIntervalMs ?? MIN_INTERVAL_MS
  let wanted: Snapshot | undefined
  let written: WrittenContent | undefined
  let writing: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined
  let lastWriteAt = Number.NEGATIVE_INFINITY
  let closed = false
  const cleaned = removeStaleTemporaryFiles(path, logger)

  const unsubscribe = snapshots.onSwap((snapshot) => {
    // The file's own snapshot, served while the database is away, is in the file already.
    if (snapshots.origin() !== 'database') return
    wanted = snapshot
    schedule()
  })
  // The snapshot in service: a newer confirmation of it, or its content if a write of it failed.
  const confirming = setInterval(() => {
    wanted ??= snapshots.current()
    schedule()
  }, options.confirmIntervalMs ?? CONFIRM_INTERVAL_MS)

  function schedule(): void {
    if (closed || writing !== undefined || timer !== undefined || wanted === undefined) return
    timer = setTimeout(writeWanted, Math.max(0, lastWriteAt + minIntervalMs - Date.now()))
  }

  function writeWanted(): void {
    timer = undefined
    const next = wanted
    wanted = undefined
    const write = next === undefined ? undefined : writeIfNew(next)
    if (write === undefined) return
    writing = write.finally(() => {
      writing = undefined
      lastWriteAt = Date.now()
      schedule()
    })
  }

  /** The write `snapshot` needs: its content, or a newer confirmation; none when neither. */
  function writeIfNew(snapshot: Snapshot): Promise<void> | undefined {
    if (snapshots.origin() !== 'database') return undefined
    const inService = snapshots.current()?.loadedAt.getTime() === snapshot.loadedAt.getTime()
    const confirmedAtMs = Math.max(
      snapshot.loadedAt.getTime(),
      (inService && snapshots.confirmedAt()?.getTime()) || 0,
    )
    // The same read's content (a window opening makes a snapshot of no new data).
    const sameRead = snapshot.loadedAt.getTime() === written?.snapshot.loadedAt.getTime()
    const content = sameRead ? written : undefined
    if (content !== undefined && confirmedAtMs <= content.confirmedAtMs) return undefined
    return writeFile(snapshot, content, confirmedAtMs)
  }

  async function writeFile(
    snapshot: Snapshot,
    content: WrittenContent | undefined,
    confirmedAtMs: number,
  ): Promise<void> {
    await cleaned
    const temporary = `${path}.${randomBytes(TEMPORARY_ID_BYTES).toString('hex')}.tmp`
    try {
      const { parts, hashed } = content ?? (await encodeContent(snapshot))
      const hash = hashed.copy()
      const confirmation = encodeJsonLine({
        confirmedAt: new Date(confirmedAtMs).toISOString(),
      })
      hash.update(confirmation)
      const lines = [...parts, confirmation, encodeChecksumLine(hash)]
      await mkdir(dirname(path), { recursive: true })
      // 'wx': created here and now; a file or a link already at the name fails the write.
      const file = await open(temporary, 'wx', 0o600)
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
      written = { snapshot, parts, hashed, confirmedAtMs }
      metrics.snapshotFileWrites.inc({ result: 'success' })
      logger.debug(
        { file: path, apps: snapshot.appKeys.length, contentWritten: content === undefined },
        'snapshot file written',
      )
    } catch (error) {
      metrics.snapshotFileWrites.inc({ result: 'error' })
      logger.warn({ file: path, err: error }, 'cannot write the snapshot file; serving on')
      await rm(temporary, { force: true }).catch(() => {})
    }
  }

  /** The header and each app's line (its content not copied), and their hash. */
  async function encodeContent(
    snapshot: Snapshot,
  ): Promise<{ parts: readonly Buffer[]; hashed: Hash }> {
    const records = recordsOf(snapshot)
    const body: Buffer[] = []
    let bytes = 0
    for (const appKey of snapshot.appKeys) {
      const record = records.get(appKey)
      if (record === undefined) continue
      for (const part of encodeRecordLine(record)) {
        body.push(part)
        bytes += part.length
      }
    }
    const header = encodeJsonLine({
      format: FILE_FORMAT,
      version: FILE_FORMAT_VERSION,
      service: options.serviceVersion,
      migrations: options.migrations,
      dataset: datasetOf(snapshot) ?? null,
      history: historyOf(snapshot) ?? null,
      loadedAt: snapshot.loadedAt.toISOString(),
      apps: snapshot.appKeys.length,
      bytes,
    })
    const hashed = createHash('sha256').update(header)
    for (let start = 0; start < body.length; start += 3 * RECORDS_PER_PIECE) {
      for (const part of body.slice(start, start + 3 * RECORDS_PER_PIECE)) hashed.update(part)
      await yieldToEventLoop()
    }
    return { parts: [header, ...body], hashed }
  }

  return {
    async close() {
      closed = true
      unsubscribe()
      clearInterval(confirming)
      clearTimeout(timer)
      timer = undefined
      await writing
      const last = wanted ?? snapshots.current()
      wanted = undefined
      if (last !== undefined) await writeIfNew(last)
    },
  }
}

/** Random bytes naming a temporary file: no two writes, of this process or another, share one. */
const TEMPORARY_ID_BYTES = 8

/** `snapshot.<16 hex digits>.tmp` beside `snapshot`. */
function isTemporaryName(name: string, fileName: string): boolean {
  const id = name.slice(fileName.length + 1, -'.tmp'.length)
  return (
    name.startsWith(`${fileName}.`) &&
    name.endsWith('.tmp') &&
    new RegExp(`^[0-9a-f]{${2 * TEMPORARY_ID_BYTES}}$`).test(id)
  )
}

/** Each instance writes its own file (the contract): no other process writes these meanwhile. */
async function removeStaleTemporaryFiles(path: string, logger: Logger): Promise<void> {
  const folder = dirname(path)
  const fileName = basename(path)
  try {
    const stale = (await readdir(folder)).filter((name) => isTemporaryName(name, fileName))
    // rm removes a link itself, never what it points to.
    await Promise.all(stale.map((name) => rm(join(folder, name), { force: true })))
    if (stale.length > 0)
      logger.info({ file: path, removed: stale }, 'removed what an interrupted write left behind')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    logger.warn({ file: path, err: error }, 'cannot remove what an interrupted write left behind')
  }
}
