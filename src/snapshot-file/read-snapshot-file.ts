import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { AppRecord } from '../snapshot/app-record.js'
import { assembleSnapshot } from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'
import {
  CHECKSUM_LINE_BYTES,
  checkHeader,
  checksumOf,
  decodeConfirmation,
  decodeHeaderLine,
  decodeRecordLine,
  SnapshotFileProblem,
} from './file-format.js'

/** Bytes hashed, and lines read, between two yields: each piece a few milliseconds. */
const HASH_CHUNK_BYTES = 4 * 1024 * 1024
const LINES_PER_PIECE = 500

/** What a file holds: its snapshot, and when that was last found equal to the database's. */
export interface StoredSnapshot {
  readonly snapshot: Snapshot
  readonly confirmedAt: Date
}

/**
 * The snapshot kept in `path`, or undefined: a missing file is an info line, one that cannot be
 * served one warn line naming the file and why. Never throws: no file stops a start.
 */
export async function readSnapshotFile(
  path: string,
  context: { readonly migrations: readonly string[]; readonly logger: Logger },
): Promise<StoredSnapshot | undefined> {
  const { logger } = context
  let file: Buffer
  try {
    file = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      logger.info({ file: path }, 'no snapshot file yet: starting from the database')
    } else {
      logger.warn(
        { file: path, err: error },
        'the snapshot file cannot be read: starting without it',
      )
    }
    return undefined
  }
  try {
    const stored = await decodeSnapshotFile(file, context.migrations)
    logger.info(
      {
        file: path,
        apps: stored.snapshot.appKeys.length,
        loadedAt: stored.snapshot.loadedAt,
        confirmedAt: stored.confirmedAt,
      },
      'snapshot file read',
    )
    return stored
  } catch (error) {
    const reason =
      error instanceof SnapshotFileProblem
        ? error.message
        : `it cannot be decoded (${(error as Error).message})`
    logger.warn(
      { file: path, reason },
      `the snapshot file is not used: ${reason}; starting as without one`,
    )
    return undefined
  }
}

async function decodeSnapshotFile(
  file: Buffer,
  migrations: readonly string[],
): Promise<StoredSnapshot> {
  const nowMs = Date.now()
  const { fields, bodyStart } = decodeHeaderLine(file)
  // The header's line, the content it claims (checked below, once the checksum holds), a
  // confirmation line of at least `{}` and its newline, the checksum's line.
  const claimedBytes = Number.isSafeInteger(fields.bytes) ? (fields.bytes as number) : 0
  const leastLength = bodyStart + claimedBytes + 3 + CHECKSUM_LINE_BYTES
  if (file.length < leastLength) {
    throw new SnapshotFileProblem(
      `it is truncated (${file.length} of at least ${leastLength} bytes)`,
    )
  }
  const hash = createHash('sha256')
  const hashedEnd = file.length - CHECKSUM_LINE_BYTES
  for (let start = 0; start < hashedEnd; start += HASH_CHUNK_BYTES) {
    hash.update(file.subarray(start, Math.min(start + HASH_CHUNK_BYTES, hashedEnd)))
    await yieldToEventLoop()
  }
  if (hash.digest('base64url') !== checksumOf(file) || file[file.length - 1] !== 0x0a) {
    throw new SnapshotFileProblem('it was altered or cut short (its checksum does not match)')
  }
  const header = checkHeader(fields, nowMs)
  const bodyEnd = bodyStart + header.bytes
  const { confirmedAt } = decodeConfirmation(file, bodyEnd, header, nowMs)
  if (header.migrations.join('\n') !== migrations.join('\n')) {
    throw new SnapshotFileProblem(
      `it was read under other migrations (${header.migrations.length} in it, ${migrations.length} here)`,
    )
  }
  const body = file.subarray(bodyStart, bodyEnd)
  if (body.length > 0 && body[body.length - 1] !== 0x0a) {
    throw new SnapshotFileProblem('its content does not end where its header says')
  }
  const records: AppRecord[] = []
  for (let start = 0; start < body.length; ) {
    const { record, next } = decodeRecordLine(body, start)
    records.push(record)
    start = next
    if (records.length % LINES_PER_PIECE === 0) await yieldToEventLoop()
  }
  if (records.length !== header.apps) {
    throw new SnapshotFileProblem(`it holds ${records.length} apps, its header says ${header.apps}`)
  }
  const snapshot = assembleSnapshot(records, {
    loadedAt: new Date(header.loadedAt),
    ...(header.dataset === null ? {} : { dataset: header.dataset }),
    ...(typeof header.history === 'string' ? { history: header.history } : {}),
  })
  return { snapshot, confirmedAt: new Date(confirmedAt) }
}
