import { type AppRecord, contentKeyOf, type ItemWindow } from '../snapshot/app-record.js'

/**
 * The snapshot file: one header line of JSON, then one line per app, its record's fields as
 * JSON, a tab, and its content's JSON as the snapshot holds it (JSON has no raw tab or newline).
 *
 *   {"format":"shell-data snapshot","version":1,…}\n
 *   ["crm","42","<hash>",<inventory entry>,["crm-admin"],[]]\t[…content…]\n
 *
 * The header names the format, the service that wrote it, the migrations its rows were read
 * under, the dataset and server history its revisions are of, and carries the body's length and SHA-256.
 */
export const FILE_FORMAT = 'shell-data snapshot'
/** Moves with any change of the layout here or of an app's content (app-content.ts). */
export const FILE_FORMAT_VERSION = 1

export interface FileHeader {
  readonly format: typeof FILE_FORMAT
  readonly version: typeof FILE_FORMAT_VERSION
  /** The service version that wrote it (package.json), for an operator's eyes. */
  readonly service: string
  /** `name sha256` of each migration the rows were read under, in order. */
  readonly migrations: readonly string[]
  /** sql/007_dataset.sql: the database whose revisions the records hold. */
  readonly dataset: string | null
  /**
   * db/server-history.ts: the server history its revisions are of; absent from files written
   * before it was recorded, which are then compared by content, as after a failover.
   */
  readonly history?: string | null
  /** When the snapshot's data were read from the database (ISO 8601). */
  readonly loadedAt: string
  readonly apps: number
  /** The body's length in bytes and its SHA-256 (base64url). */
  readonly bytes: number
  readonly sha256: string
}

/** Why a file is not served; said in the warn line. */
export class SnapshotFileProblem extends Error {
  override name = 'SnapshotFileProblem'
}

type RecordTuple = [
  appKey: string,
  revision: string | null,
  hash: string,
  inventoryJson: string,
  grantedRoles: readonly string[],
  windows: readonly [itemKey: string, from: number | null, until: number | null][],
]

const TAB = 0x09
const NEWLINE = 0x0a

/** One app's line. */
export function encodeRecordLine(record: AppRecord): Buffer[] {
  const tuple: RecordTuple = [
    record.appKey,
    record.revision,
    record.hash,
    record.inventoryJson,
    record.grantedRoles,
    record.windows.map((window) => [window.itemKey, window.visibleFrom, window.visibleUntil]),
  ]
  return [Buffer.from(`${JSON.stringify(tuple)}\t`), record.content, Buffer.from('\n')]
}

export function encodeHeaderLine(header: FileHeader): Buffer {
  return Buffer.from(`${JSON.stringify(header)}\n`)
}

/** The header, and where the body starts; throws SnapshotFileProblem for what is not a header. */
export function decodeHeader(file: Buffer): { header: FileHeader; bodyStart: number } {
  if (file.length === 0) throw new SnapshotFileProblem('it is empty')
  const end = file.indexOf(NEWLINE)
  let header: Partial<FileHeader> | undefined
  try {
    header = JSON.parse(file.toString('utf8', 0, end === -1 ? file.length : end))
  } catch {}
  if (header?.format !== FILE_FORMAT || end === -1) {
    throw new SnapshotFileProblem('it is not a snapshot file of this service')
  }
  if (header.version !== FILE_FORMAT_VERSION) {
    throw new SnapshotFileProblem(
      `its format is version ${String(header.version)}, this service reads ${FILE_FORMAT_VERSION}`,
    )
  }
  return { header: header as FileHeader, bodyStart: end + 1 }
}

/**
 * The record on the line starting at `start` of `body`, and where the next line starts. The
 * content is copied out, so that the file's buffer is not kept alive by the apps read from it.
 */
export function decodeRecordLine(body: Buffer, start: number): { record: AppRecord; next: number } {
  const tab = body.indexOf(TAB, start)
  const end = tab === -1 ? -1 : body.indexOf(NEWLINE, tab)
  if (end === -1) throw new SnapshotFileProblem('a line of it is cut short')
  let tuple: RecordTuple
  try {
    tuple = JSON.parse(body.toString('utf8', start, tab))
  } catch {
    throw new SnapshotFileProblem('a line of it is not what this service writes')
  }
  const [appKey, revision, hash, inventoryJson, grantedRoles, windows] = tuple
  const content = Buffer.allocUnsafeSlow(end - tab - 1)
  body.copy(content, 0, tab + 1, end)
  const record: AppRecord = Object.freeze({
    appKey,
    revision,
    hash,
    contentKey: contentKeyOf(appKey, hash),
    content,
    inventoryJson,
    grantedRoles: Object.freeze(grantedRoles),
    windows: Object.freeze(
      windows.map(
        ([itemKey, visibleFrom, visibleUntil]): ItemWindow => ({
          itemKey,
          visibleFrom,
          visibleUntil,
        }),
      ),
    ),
  })
  return { record, next: end + 1 }
}
