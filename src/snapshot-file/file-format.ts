import type { Hash } from 'node:crypto'
import { type AppRecord, contentKeyOf } from '../snapshot/app-record.js'

/**
 * The snapshot file: a header line of JSON; one line per app, its record's fields as JSON, a tab,
 * and its content's JSON as the snapshot holds it (JSON has no raw tab or newline); a line with
 * the last confirmation; last, the SHA-256 (base64url) of every byte before it.
 *
 *   {"format":"shell-data snapshot","version":2,…,"history":"7300…/2",…,"apps":1,"bytes":123}\n
 *   ["crm","42","<hash>",<inventory entry>,["crm-admin"],[]]\t[…content…]\n
 *   {"confirmedAt":"2026-11-28T19:52:08.000Z"}\n
 *   <SHA-256 of all of the above>\n
 *
 * The confirmation comes after the content, so that a writer that only confirms hashes the
 * confirmation line on a copy of the hash it made of the content (snapshot-file-writer.ts).
 */
export const FILE_FORMAT = 'shell-data snapshot'
/**
 * Moves with any change of the layout here or of an app's content (app-content.ts):
 * test/snapshot-file/file-layout.test.ts fails when the bytes change under the same number.
 */
export const FILE_FORMAT_VERSION = 2

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
   * db/server-history.ts: the server history its revisions and watermark are of; null when not
   * known, and then the first read compares every app by content, as after a failover.
   */
  readonly history: string | null
  /** When the snapshot's data were read from the database (ISO 8601). */
  readonly loadedAt: string
  readonly apps: number
  /** The content lines' length in bytes. */
  readonly bytes: number
}

export interface FileConfirmation {
  /** When the data were last found equal to the database's (ISO 8601); never before loadedAt. */
  readonly confirmedAt: string
}

export class SnapshotFileProblem extends Error {
  override name = 'SnapshotFileProblem'
}

/**
 * A clock stepped back after a write (NTP) puts a time just written slightly ahead: a minute of
 * slack, which lets a file be served a minute longer than SNAPSHOT_FILE_MAX_AGE_S at most.
 */
const FUTURE_SLACK_MS = 60_000

/** What is wrong with a field's value, or undefined. */
type FieldCheck = (value: unknown, nowMs: number) => string | undefined

const isText: FieldCheck = (value) => (typeof value === 'string' ? undefined : 'is not a string')
const isCount: FieldCheck = (value) =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? undefined : 'is not a count'
const isPastTime: FieldCheck = (value, nowMs) => {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN
  if (Number.isNaN(ms)) return 'is not a time'
  return ms > nowMs + FUTURE_SLACK_MS ? 'lies in the future' : undefined
}

/** A new field is one line here. */
const HEADER_FIELDS: { readonly [Field in keyof FileHeader]-?: FieldCheck } = {
  format: (value) => (value === FILE_FORMAT ? undefined : 'is not this service'),
  version: (value) => (value === FILE_FORMAT_VERSION ? undefined : 'is not this version'),
  service: isText,
  migrations: (value) =>
    Array.isArray(value) && value.every((name) => typeof name === 'string')
      ? undefined
      : 'is not a list of names',
  dataset: (value) => (value === null ? undefined : isText(value, 0)),
  history: (value) => (value === null ? undefined : isText(value, 0)),
  loadedAt: isPastTime,
  apps: isCount,
  bytes: isCount,
}
const CONFIRMATION_FIELDS: { readonly [Field in keyof FileConfirmation]-?: FieldCheck } = {
  confirmedAt: isPastTime,
}

/** The checksum's line: 43 base64url characters of SHA-256 and a newline. */
export const CHECKSUM_LINE_BYTES = 44
const TAB = 0x09
const NEWLINE = 0x0a

type RecordTuple = [
  appKey: string,
  revision: string | null,
  hash: string,
  inventoryJson: string,
  grantedRoles: readonly string[],
  windows: readonly [itemKey: string, from: number | null, until: number | null][],
]

/** The header's line, or the confirmation's. */
export function encodeJsonLine(line: FileHeader | FileConfirmation): Buffer {
  return Buffer.from(`${JSON.stringify(line)}\n`)
}

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

export function encodeChecksumLine(hash: Hash): Buffer {
  return Buffer.from(`${hash.digest('base64url')}\n`)
}

/** The checksum of a file at least that line long. */
export function checksumOf(file: Buffer): string {
  return file.toString('latin1', file.length - CHECKSUM_LINE_BYTES, file.length - 1)
}

/**
 * The header's fields, unchecked but of this format and version, and where the content starts.
 * Read before the checksum, to name another format.
 */
export function decodeHeaderLine(file: Buffer): {
  fields: Record<string, unknown>
  bodyStart: number
} {
  if (file.length === 0) throw new SnapshotFileProblem('it is empty')
  const end = file.indexOf(NEWLINE)
  const fields = parseObject(file.toString('utf8', 0, end === -1 ? file.length : end))
  if (fields?.format !== FILE_FORMAT || end === -1) {
    throw new SnapshotFileProblem('it is not a snapshot file of this service')
  }
  if (fields.version !== FILE_FORMAT_VERSION) {
    throw new SnapshotFileProblem(
      `its format is version ${String(fields.version)}, this service reads ${FILE_FORMAT_VERSION}`,
    )
  }
  return { fields, bodyStart: end + 1 }
}

export function checkHeader(fields: Record<string, unknown>, nowMs: number): FileHeader {
  checkFields(fields, HEADER_FIELDS, 'header', nowMs)
  return fields as unknown as FileHeader
}

/** The confirmation line (`start` to the checksum line), checked. */
export function decodeConfirmation(
  file: Buffer,
  start: number,
  header: FileHeader,
  nowMs: number,
): FileConfirmation {
  const end = file.length - CHECKSUM_LINE_BYTES - 1
  const confirmation =
    file[end] === NEWLINE ? parseObject(file.toString('utf8', start, end)) : undefined
  if (confirmation === undefined) {
    throw new SnapshotFileProblem('its confirmation line is not what this service writes')
  }
  checkFields(confirmation, CONFIRMATION_FIELDS, 'confirmation', nowMs)
  const checked = confirmation as unknown as FileConfirmation
  if (Date.parse(checked.confirmedAt) < Date.parse(header.loadedAt)) {
    throw new SnapshotFileProblem('its confirmedAt is earlier than its loadedAt')
  }
  return checked
}

/**
 * The record on the line at `start`, and where the next starts. The content is copied out, so
 * that the apps read from it do not keep the file's buffer alive.
 */
export function decodeRecordLine(body: Buffer, start: number): { record: AppRecord; next: number } {
  const tab = body.indexOf(TAB, start)
  const end = tab === -1 ? -1 : body.indexOf(NEWLINE, tab)
  if (end === -1) throw new SnapshotFileProblem('a line of it is cut short')
  let tuple: unknown
  try {
    tuple = JSON.parse(body.toString('utf8', start, tab))
  } catch {}
  if (!isRecordTuple(tuple)) {
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
      windows.map(([itemKey, visibleFrom, visibleUntil]) => ({
        itemKey,
        visibleFrom,
        visibleUntil,
      })),
    ),
  })
  return { record, next: end + 1 }
}

function parseObject(json: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(json)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

function checkFields(
  object: Record<string, unknown>,
  fields: Readonly<Record<string, FieldCheck>>,
  where: string,
  nowMs: number,
): void {
  for (const [name, check] of Object.entries(fields)) {
    const problem = check(object[name], nowMs)
    if (problem !== undefined) throw new SnapshotFileProblem(`its ${where}'s ${name} ${problem}`)
  }
}

const isStringOrNull = (value: unknown) => value === null || typeof value === 'string'
const isInstantOrNull = (value: unknown) => value === null || Number.isFinite(value)

function isRecordTuple(value: unknown): value is RecordTuple {
  if (!Array.isArray(value) || value.length !== 6) return false
  const [appKey, revision, hash, inventoryJson, grantedRoles, windows] = value as unknown[]
  return (
    typeof appKey === 'string' &&
    isStringOrNull(revision) &&
    typeof hash === 'string' &&
    typeof inventoryJson === 'string' &&
    Array.isArray(grantedRoles) &&
    grantedRoles.every((role) => typeof role === 'string') &&
    Array.isArray(windows) &&
    windows.every(
      (window: unknown) =>
        Array.isArray(window) &&
        window.length === 3 &&
        typeof window[0] === 'string' &&
        isInstantOrNull(window[1]) &&
        isInstantOrNull(window[2]),
    )
  )
}
