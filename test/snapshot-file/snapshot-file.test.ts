import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { assembleSnapshot, buildSnapshot, historyOf } from '../../src/snapshot/build.js'
import type { Snapshot, SnapshotOrigin } from '../../src/snapshot/types.js'
import { readSnapshotFile } from '../../src/snapshot-file/read-snapshot-file.js'
import { startSnapshotFileWriter } from '../../src/snapshot-file/snapshot-file-writer.js'
import { readMetric } from '../helpers/metrics.js'
import { waitFor } from '../helpers/wait.js'
import {
  appRow,
  brandingRow,
  callerWith,
  grantRows,
  itemRow,
  renderBody,
} from '../snapshot/rows.js'

const MIGRATIONS = ['001_schema.sql aaaa', '002_more.sql bbbb']
const HOUR_MS = 3_600_000

interface LogLine {
  readonly level: number
  readonly msg: string
  readonly file?: string
  readonly reason?: string
}

function recordingLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  return { logger, lines }
}

/** Two apps, with labels, grants, a rollout and a window: every field the file must carry. */
function richSnapshot(crmLabel = 'Leads'): Snapshot {
  const now = Date.now()
  return buildSnapshot(
    {
      apps: [
        appRow('crm', { name: 'CRM', revision: '7' }),
        appRow('hr', { name: 'HR', revision: '9', defaultLocale: 'de' }),
      ],
      branding: [brandingRow('crm', { productName: 'Acme', theme: { radius: '4px' } })],
      menuItems: [
        itemRow('1', 'leads', { label: crmLabel }),
        itemRow('2', 'reports', { position: 1, rolloutPercent: 50 }),
        itemRow('3', 'promo', {
          position: 2,
          visibleFrom: now - HOUR_MS,
          visibleUntil: now + HOUR_MS,
        }),
        itemRow('4', 'group', { position: 3, href: null }),
        itemRow('5', 'child', { parentId: '4' }),
        itemRow('6', 'payroll', { appKey: 'hr' }),
      ],
      grants: [...grantRows('1', 'crm-sales'), ...grantRows('5', 'crm-admin')],
      labels: [
        { menuItemId: '1', locale: 'de', label: 'Interessenten' },
        { menuItemId: '1', locale: 'fr', label: 'Prospects' },
        { menuItemId: '6', locale: 'en', label: 'Payroll' },
      ],
    },
    { dataset: 'dataset-1', history: '7300000000000000001/1', loadedAt: new Date(now - 5_000) },
  )
}

/** A writer on a folder of its own, fed by hand as the feed would feed it. */
async function startWriter(
  t: Test,
  options: { minIntervalMs?: number; file?: string; logger?: pino.Logger } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-snapshot-file-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, options.file ?? 'snapshot')
  const metrics = createMetrics({ defaultMetrics: false })
  const listeners = new Set<(snapshot: Snapshot) => void>()
  let origin: SnapshotOrigin = 'database'
  const writer = startSnapshotFileWriter({
    path,
    snapshots: {
      onSwap(listener) {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      origin: () => origin,
    },
    migrations: MIGRATIONS,
    serviceVersion: '9.9.9',
    logger: options.logger ?? pino({ level: 'silent' }),
    metrics,
    minIntervalMs: options.minIntervalMs ?? 0,
  })
  t.teardown(() => writer.close())
  const swap = (snapshot: Snapshot, from: SnapshotOrigin = 'database') => {
    origin = from
    for (const listener of listeners) listener(snapshot)
  }
  return { dir, path, metrics, swap, writer }
}

const writesOf = (metrics: Metrics, result: 'success' | 'error' = 'success') =>
  readMetric(metrics.snapshotFileWrites, { result })

const read = (path: string, logger = pino({ level: 'silent' })) =>
  readSnapshotFile(path, { migrations: MIGRATIONS, logger })

t.test('a snapshot written and read back answers with the same bytes and tags', async (t) => {
  const { dir, path, metrics, swap } = await startWriter(t)
  const written = richSnapshot()
  swap(written)
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  t.same(await readdir(dir), ['snapshot'], 'nothing but the file is left beside it')
  t.equal((await stat(path)).mode & 0o777, 0o600, 'readable by the service alone')

  const back = await read(path)
  if (back === undefined) throw new Error('the file was not read')
  t.equal(back.version, written.version)
  t.same(back.appKeys, written.appKeys)
  t.equal(back.appsInventory.tag, written.appsInventory.tag)
  t.equal(back.loadedAt.getTime(), written.loadedAt.getTime(), 'when its data were read')
  t.equal(historyOf(back), '7300000000000000001/1', 'the server history it was read from')
  t.same(back.grantedRoles('crm'), ['crm-admin', 'crm-sales'])
  t.equal(back.nextChangeAt, written.nextChangeAt, "the window's next instant")
  for (const [appKey, roles, locale] of [
    ['crm', ['crm-sales'], 'de'],
    ['crm', ['crm-admin'], 'fr'],
    ['crm', [], 'en'],
    ['hr', [], 'de'],
  ] as const) {
    const caller = callerWith([...roles])
    const before = written.app(appKey)?.variant(caller, locale)
    const after = back.app(appKey)?.variant(caller, locale)
    if (before === undefined || after === undefined) throw new Error(`no ${appKey}`)
    t.equal(after.tag, before.tag, `${appKey} ${roles.join()} ${locale}: the same tag`)
    t.equal(renderBody(after), renderBody(before), 'and the same bytes')
  }
})

t.test('the header names the format, the service, the migrations and a checksum', async (t) => {
  const { path, metrics, swap } = await startWriter(t)
  swap(richSnapshot())
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  const [headerLine = ''] = (await readFile(path, 'utf8')).split('\n')
  t.match(JSON.parse(headerLine), {
    format: 'shell-data snapshot',
    version: 1,
    service: '9.9.9',
    migrations: MIGRATIONS,
    dataset: 'dataset-1',
    history: '7300000000000000001/1',
    apps: 2,
    sha256: /^[A-Za-z0-9_-]{43}$/,
  })
})

t.test('a burst of snapshots is written at most once an interval, the last one last', async (t) => {
  const { path, metrics, swap } = await startWriter(t, { minIntervalMs: 300 })
  const labels = Array.from({ length: 10 }, (_, index) => `Leads ${index}`)
  let previous: Snapshot | undefined
  for (const label of labels) {
    previous = buildSnapshot(richSnapshotRows(label), {
      ...(previous && { previous }),
      dataset: 'd',
    })
    swap(previous)
  }
  await waitFor(async () => {
    const back = await read(path)
    return back?.version === previous?.version
  }, 'the last snapshot in the file')
  const writes = await writesOf(metrics)
  t.ok(writes >= 1 && writes <= 2, `ten snapshots in a burst, ${writes} writes`)
})

/** The rows of richSnapshot, for builds on top of one another. */
function richSnapshotRows(crmLabel: string) {
  return {
    apps: [appRow('crm', { revision: crmLabel })],
    branding: [],
    menuItems: [itemRow('1', 'leads', { label: crmLabel })],
    grants: [],
    labels: [],
  }
}

t.test('the file it served from is not written again, nor a window that opened', async (t) => {
  const { path, metrics, swap, writer } = await startWriter(t)
  const snapshot = richSnapshot()
  swap(snapshot, 'file')
  swap(snapshot)
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write of the database snapshot')
  // Made again at a window's instant: the same data, read at the same time.
  swap(assembleSnapshot([], { previous: snapshot, now: Date.now() + 2 * HOUR_MS }))
  await writer.close()
  t.equal(await writesOf(metrics), 1, 'written once')
  t.ok(await read(path), 'and readable')
})

t.test('a write that fails is counted and said, and nothing else happens', async (t) => {
  const { logger, lines } = recordingLogger()
  // Its folder cannot be made: a file stands where it would be.
  const { dir, metrics, swap } = await startWriter(t, { file: 'a-file/snapshot', logger })
  await writeFile(join(dir, 'a-file'), 'not a folder')
  swap(richSnapshot())
  await waitFor(async () => (await writesOf(metrics, 'error')) === 1, 'the failed write')
  t.match(lines, [{ level: 40, msg: /cannot write the snapshot file/ }])
  t.same(await readdir(dir), ['a-file'], 'nothing left behind')
})

t.test('a file that cannot be served: one warn line naming it and why, no snapshot', async (t) => {
  const { path, metrics, swap, dir } = await startWriter(t)
  swap(richSnapshot())
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  const good = await readFile(path)
  const newline = good.indexOf(10)
  const header = JSON.parse(good.subarray(0, newline).toString())
  const withHeader = (fields: object) =>
    Buffer.concat([Buffer.from(JSON.stringify({ ...header, ...fields })), good.subarray(newline)])
  const altered = Buffer.from(good)
  const middle = newline + Math.floor((good.length - newline) / 2)
  altered.writeUInt8(altered.readUInt8(middle) ^ 0x01, middle)

  const cases: [string, Buffer, RegExp][] = [
    ['empty', Buffer.alloc(0), /empty/],
    ['truncated', good.subarray(0, good.length - 100), /truncated/],
    ['cut inside its header', good.subarray(0, newline - 10), /not a snapshot file/],
    ['altered', altered, /altered/],
    ['longer than its header says', Buffer.concat([good, Buffer.from('x\n')]), /altered/],
    ['of another format version', withHeader({ version: 2 }), /format is version 2/],
    ['of other migrations', withHeader({ migrations: MIGRATIONS.slice(0, 1) }), /other migrations/],
    ['not a snapshot file', Buffer.from('{"hello":"world"}\n'), /not a snapshot file/],
  ]
  for (const [what, bytes, reason] of cases) {
    const file = join(dir, what.replaceAll(' ', '-'))
    await writeFile(file, bytes)
    const { logger, lines } = recordingLogger()
    t.equal(await read(file, logger), undefined, `${what}: not served`)
    t.equal(lines.length, 1, `${what}: one line`)
    t.match(lines[0], { level: 40, file, reason }, `${what}: a warning naming the file and why`)
  }

  const { logger, lines } = recordingLogger()
  const missing = join(dir, 'missing')
  t.equal(await read(missing, logger), undefined, 'a missing file: none')
  t.match(lines, [{ level: 30, file: missing, msg: /no snapshot file yet/ }], 'said at info')
})

t.test('a file written before histories were recorded is read, its history unknown', async (t) => {
  const { path, metrics, swap } = await startWriter(t)
  swap(richSnapshot())
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  const good = await readFile(path)
  const newline = good.indexOf(10)
  const { history: _, ...older } = JSON.parse(good.subarray(0, newline).toString())
  await writeFile(path, Buffer.concat([Buffer.from(JSON.stringify(older)), good.subarray(newline)]))
  const back = await read(path)
  t.ok(back, 'served')
  // Unknown: its first read compares every app by content (feed/read-changed-apps.ts).
  t.equal(back && historyOf(back), undefined, 'of no known history')
})
