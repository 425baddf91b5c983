/**
 * What a confirmation of unchanged data costs the snapshot file at 5,000 apps, beside a write of
 * changed content: `node --import tsx bench/snapshot-file-confirm.ts [apps] [rounds]`. Apps are
 * synthesized records of the bench dataset's size (34.5 MB of file at 5,001 apps, README "scale"),
 * so no database is needed. Prints the file's size, each kind of write's median duration (trigger
 * to the file renamed and flushed) and the longest event-loop stall seen meanwhile. BENCH_DIR:
 * the folder written in (the system's temporary folder by default).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import pino from 'pino'
import { createMetrics } from '../src/metrics.js'
import { type AppRecord, contentKeyOf } from '../src/snapshot/app-record.js'
import { assembleSnapshot } from '../src/snapshot/build.js'
import type { Snapshot } from '../src/snapshot/types.js'
import { startSnapshotFileWriter } from '../src/snapshot-file/snapshot-file-writer.js'

const APPS = Number(process.argv[2] ?? 5_000)
const ROUNDS = Number(process.argv[3] ?? 7)
/** The bench dataset's bytes per app in the file: 34.5 MB over 5,001 apps. */
const CONTENT_BYTES = 6_800

function syntheticRecord(index: number, generation: number): AppRecord {
  const appKey = `app-${String(index).padStart(4, '0')}`
  const hash = `h${generation}-${index}`.padEnd(20, 'x')
  return Object.freeze({
    appKey,
    revision: String(generation),
    hash,
    contentKey: contentKeyOf(appKey, hash),
    content: Buffer.from(JSON.stringify([appKey, 'x'.repeat(CONTENT_BYTES)])),
    inventoryJson: JSON.stringify({
      key: appKey,
      name: `App ${index}`,
      locales: ['de', 'en', 'fr'],
    }),
    grantedRoles: Object.freeze(['role-a', 'role-b']),
    windows: Object.freeze([]),
  })
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

const dir = await mkdtemp(join(process.env.BENCH_DIR ?? tmpdir(), 'shell-data-confirm-bench-'))
const path = join(dir, 'snapshot')
const metrics = createMetrics({ defaultMetrics: false })
const listeners = new Set<(snapshot: Snapshot) => void>()
let current: Snapshot | undefined
let confirmedAt: Date | undefined
const writer = startSnapshotFileWriter({
  path,
  snapshots: {
    onSwap: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    origin: () => 'database',
    current: () => current,
    confirmedAt: () => confirmedAt,
  },
  migrations: ['001_schema.sql x'],
  serviceVersion: 'bench',
  logger: pino({ level: 'silent' }),
  metrics,
  minIntervalMs: 0,
  confirmIntervalMs: 5,
})
const writes = async () =>
  (await metrics.snapshotFileWrites.get()).values.find((v) => v.labels.result === 'success')
    ?.value ?? 0
async function timeWrite(trigger: () => void): Promise<{ ms: number; stallMs: number }> {
  const before = await writes()
  const delay = monitorEventLoopDelay({ resolution: 5 })
  delay.enable()
  const startedAt = performance.now()
  trigger()
  while ((await writes()) === before) await new Promise((resolve) => setTimeout(resolve, 1))
  const ms = performance.now() - startedAt
  delay.disable()
  return { ms, stallMs: delay.max / 1e6 }
}

const contentWrites: { ms: number; stallMs: number }[] = []
const confirmationWrites: { ms: number; stallMs: number }[] = []
for (let round = 1; round <= ROUNDS; round += 1) {
  const records = Array.from({ length: APPS }, (_, index) => syntheticRecord(index, round))
  const snapshot = assembleSnapshot(records, { loadedAt: new Date(Date.now() - 1_000) })
  contentWrites.push(
    await timeWrite(() => {
      current = snapshot
      confirmedAt = snapshot.loadedAt
      for (const listener of listeners) listener(snapshot)
    }),
  )
  confirmationWrites.push(
    await timeWrite(() => {
      confirmedAt = new Date()
    }),
  )
}
const bytes = (await stat(path)).size
await writer.close()
await rm(dir, { recursive: true, force: true })
process.stdout.write(
  `${JSON.stringify({
    apps: APPS,
    fileMB: Math.round(bytes / 1e5) / 10,
    rounds: ROUNDS,
    contentWriteMs: Math.round(median(contentWrites.map((w) => w.ms))),
    confirmationWriteMs: Math.round(median(confirmationWrites.map((w) => w.ms))),
    contentStallMaxMs: Math.round(Math.max(...contentWrites.map((w) => w.stallMs))),
    confirmationStallMaxMs: Math.round(Math.max(...confirmationWrites.map((w) => w.stallMs))),
  })}\n`,
)
