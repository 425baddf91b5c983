import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { AppRecord } from '../snapshot/app-record.js'
import { assembleSnapshot } from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'
import { decodeHeader, decodeRecordLine, SnapshotFileProblem } from './file-format.js'

/** Bytes hashed, and lines read, between two yields: each piece a few milliseconds. */
const HASH_CHUNK_BYTES = 4 * 1024 * 1024
const LINES_PER_PIECE = 500

/**
 * The snapshot kept in `path`, or undefined: a missing file is an info line, one that cannot be
 * served (empty, truncated, altered, of another format or other migrations) one warn line naming
 * the file and why. Never throws: no file stops a start.
 */
export async function readSnapshotFile(
  path: string,
  context: { readonly migrations: readonly string[]; readonly logger: Logger },
): Promise<Snapshot | undefined> {
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
    const snapshot = await decodeSnapshotFile(file, context.migrations)
    logger.info(
      { file: path, apps: snapshot.appKeys.length, loadedAt: snapshot.loadedAt },
      'snapshot file read',
    )
    return snapshot
  } catch (error) {
    if (!(error instanceof SnapshotFileProblem)) throw error
    logger.warn(
      { file: path, reason: error.message },
      `the snapshot file is not used: ${error.message}; starting as without one`,
    )
    return undefined
  }
}

async function decodeSnapshotFile(file: Buffer, migrations: readonly string[]): Promise<Snapshot> {
  const { header, bodyStart } = decodeHeader(file)
  if (header.migrations.join('\n') !== migrations.join('\n')) {
    throw new SnapshotFileProblem(
      `it was read under other migrations (${header.migrations.length} in it, ${migrations.length} here)`,
    )
  }
  const body = file.subarray(bodyStart)
  if (body.length < header.bytes) {
    throw new SnapshotFileProblem(`it is truncated (${body.length} of ${header.bytes} bytes)`)
  }
  const hash = createHash('sha256')
  for (let start = 0; start < body.length; start += HASH_CHUNK_BYTES) {
    hash.update(body.subarray(start, start + HASH_CHUNK_BYTES))
    await yieldToEventLoop()
  }
  if (body.length !== header.bytes || hash.digest('base64url') !== header.sha256) {
    throw new SnapshotFileProblem('it was altered (its checksum does not match)')
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
  return assembleSnapshot(records, {
    loadedAt: new Date(header.loadedAt),
    ...(header.dataset === null ? {} : { dataset: header.dataset }),
    ...(typeof header.history === 'string' ? { history: header.history } : {}),
  })
}
