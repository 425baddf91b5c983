import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { createSnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { assembleSnapshot, historyOf } from '../../src/snapshot/build.js'
import type { Snapshot, SnapshotOrigin } from '../../src/snapshot/types.js'
import { FILE_FORMAT_VERSION } from '../../src/snapshot-file/file-format.js'
import {
  readSnapshotFile,
  type StoredSnapshot,
} from '../../src/snapshot-file/read-snapshot-file.js'
import { startSnapshotFileWriter } from '../../src/snapshot-file/snapshot-file-writer.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'
import { readMetric } from '../helpers/metrics.js'
import { sealed, splitFile } from '../helpers/snapshot-file.js'
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
  options: {
    minIntervalMs?: number
    confirmIntervalMs?: number
    file?: string
    logger?: pino.Logger
  } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-snapshot-file-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, options.file ?? 'snapshot')
  const metrics = createMetrics({ defaultMetrics: false })
  const listeners = new Set<(snapshot: Snapshot) => void>()
  let origin: SnapshotOrigin = 'database'
  let current: Snapshot | undefined
  let confirmedAt: Date | undefined
  const writer = startSnapshotFileWriter({
    path,
    snapshots: {
      onSwap(listener) {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      origin: () => origin,
      current: () => current,
      confirmedAt: () => confirmedAt,
    },
    migrations: MIGRATIONS,
    serviceVersion: '9.9.9',
    logger: options.logger ?? pino({ level: 'silent' }),
    metrics,
    minIntervalMs: options.minIntervalMs ?? 0,
    confirmIntervalMs: options.confirmIntervalMs ?? 60_000,
  })
  t.teardown(() => writer.close())
  const swap = (snapshot: Snapshot, from: SnapshotOrigin = 'database') => {
    origin = from
    current = snapshot
    confirmedAt = snapshot.loadedAt
    for (const listener of listeners) listener(snapshot)
  }
  /** The feed's check found the data unchanged at `at`. */
  const confirm = (at: Date) => {
    confirmedAt = at
  }
  return { dir, path, metrics, swap, confirm, writer }
}

const writesOf = (metrics: Metrics, result: 'success' | 'error' = 'success') =>
  readMetric(metrics.snapshotFileWrites, { result })

const read = (path: string, logger = pino({ level: 'silent' })) =>
  readSnapshotFile(path, { migrations: MIGRATIONS, logger })

/** The snapshot a file holds; throws when it holds none. */
async function readBack(path: string): Promise<Snapshot> {
  const stored = await read(path)
  if (stored === undefined) throw new Error('the file was not read')
  return stored.snapshot
}

t.test('a snapshot written and read back answers with the same bytes and tags', async (t) => {
  const { dir, path, metrics, swap } = await startWriter(t)
  const written = richSnapshot()
  swap(written)
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  t.same(await readdir(dir), ['snapshot'], 'nothing but the file is left beside it')
  t.equal((await stat(path)).mode & 0o777, 0o600, 'readable by the service alone')

  const back = await readBack(path)
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

t.test(
  'the file names its format, service, migrations, times, and ends with a checksum of it all',
  async (t) => {
    const { path, metrics, swap } = await startWriter(t)
    const snapshot = richSnapshot()
    swap(snapshot)
    await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
    const file = await readFile(path)
    const parts = splitFile(file)
    t.match(JSON.parse(parts.header.toString()), {
      format: 'shell-data snapshot',
      version: FILE_FORMAT_VERSION,
      service: '9.9.9',
      migrations: MIGRATIONS,
      dataset: 'dataset-1',
      history: '7300000000000000001/1',
      loadedAt: snapshot.loadedAt.toISOString(),
      apps: 2,
      bytes: parts.body.length,
    })
    t.same(JSON.parse(parts.confirmation.toString()), {
      confirmedAt: snapshot.loadedAt.toISOString(),
    })
    const everythingBefore = file.subarray(0, file.length - 44)
    t.equal(
      parts.checksum.toString(),
      `${createHash('sha256').update(everythingBefore).digest('base64url')}\n`,
      'the last line: the SHA-256 of every byte before it, header included',
    )
  },
)

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
    return back?.snapshot.version === previous?.version
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

t.test(
  'a write that fails is counted and said, and tried again at the next confirmation',
  async (t) => {
    const { logger, lines } = recordingLogger()
    // Its folder cannot be made: a file stands where it would be.
    const { dir, metrics, swap } = await startWriter(t, {
      file: 'a-file/snapshot',
      logger,
      confirmIntervalMs: 20,
    })
    await writeFile(join(dir, 'a-file'), 'not a folder')
    swap(richSnapshot())
    await waitFor(async () => (await writesOf(metrics, 'error')) >= 1, 'the failed write')
    t.match(lines[0], { level: 40, msg: /cannot write the snapshot file/ })
    t.same(await readdir(dir), ['a-file'], 'nothing left behind')
    // The volume is writable again: the next confirmation's turn writes the content.
    await rm(join(dir, 'a-file'))
    await waitFor(async () => (await writesOf(metrics)) === 1, 'the write tried again')
    t.ok(await read(join(dir, 'a-file/snapshot')), 'a whole file')
  },
)

t.test('a file that cannot be served: one warn line naming it and why, no snapshot', async (t) => {
  const { path, metrics, swap, dir } = await startWriter(t)
  swap(richSnapshot())
  await waitFor(async () => (await writesOf(metrics)) === 1, 'the write')
  const good = await readFile(path)
  const parts = splitFile(good)
  const header = JSON.parse(parts.header.toString())
  const confirmation = JSON.parse(parts.confirmation.toString())
  const withHeader = (fields: object) => sealed({ ...header, ...fields }, parts.body, confirmation)
  const withConfirmation = (fields: object) =>
    sealed(header, parts.body, { ...confirmation, ...fields })
  const flipped = (offset: number) => {
    const altered = Buffer.from(good)
    altered.writeUInt8(altered.readUInt8(offset) ^ 0x01, offset)
    return altered
  }
  const headerEnd = parts.header.length
  const inFuture = new Date(Date.now() + 24 * HOUR_MS).toISOString()
  const monthAgo = new Date(Date.now() - 30 * 24 * HOUR_MS).toISOString()

  const cases: [string, Buffer, RegExp][] = [
    ['empty', Buffer.alloc(0), /empty/],
    ['truncated', good.subarray(0, good.length - 200), /truncated/],
    ['without its checksum line', good.subarray(0, good.length - 44), /truncated/],
    ['its checksum line cut short', good.subarray(0, good.length - 5), /altered or cut short/],
    ['cut to its header line', good.subarray(0, headerEnd), /truncated/],
    ['cut inside its header', good.subarray(0, headerEnd - 10), /not a snapshot file/],
    ['a byte changed in its content', flipped(headerEnd + 20), /altered/],
    ['a byte changed in its header', flipped(good.indexOf('9.9.9')), /altered/],
    ['a byte changed in its loadedAt', flipped(good.indexOf('"loadedAt"') + 14), /altered/],
    ['a byte changed in its confirmation', flipped(good.length - 50), /altered/],
    ['a byte changed in its checksum', flipped(good.length - 2), /altered/],
    ['longer than it says', Buffer.concat([good, Buffer.from('x\n')]), /altered/],
    ['of another format version', withHeader({ version: 1 }), /format is version 1/],
    ['of other migrations', withHeader({ migrations: MIGRATIONS.slice(0, 1) }), /other migrations/],
    ['not a snapshot file', Buffer.from('{"hello":"world"}\n'), /not a snapshot file/],
    ['a header that is a list', Buffer.from('["shell-data snapshot"]\n'), /not a snapshot file/],
    ['migrations null', withHeader({ migrations: null }), /header's migrations is not a list/],
    ['migrations a string', withHeader({ migrations: 'x' }), /header's migrations is not a list/],
    ['migrations of numbers', withHeader({ migrations: [1, 2] }), /header's migrations is not/],
    ['loadedAt garbage', withHeader({ loadedAt: 'garbage' }), /header's loadedAt is not a time/],
    ['loadedAt a number', withHeader({ loadedAt: 12 }), /header's loadedAt is not a time/],
    ['loadedAt in the future', withHeader({ loadedAt: inFuture }), /loadedAt lies in the future/],
    ['service missing', withHeader({ service: undefined }), /header's service is not a string/],
    ['dataset a number', withHeader({ dataset: 7 }), /header's dataset is not a string/],
    ['history a number', withHeader({ history: 2 }), /header's history is not a string/],
    ['history missing', withHeader({ history: undefined }), /header's history is not a string/],
    ['apps a string', withHeader({ apps: '2' }), /header's apps is not a count/],
    ['apps negative', withHeader({ apps: -1 }), /header's apps is not a count/],
    ['bytes a fraction', withHeader({ bytes: 1.5 }), /header's bytes is not a count/],
    ['apps one too many', withHeader({ apps: 3 }), /holds 2 apps, its header says 3/],
    ['bytes one short', withHeader({ bytes: parts.body.length - 1 }), /does not end where/],
    [
      'confirmedAt garbage',
      withConfirmation({ confirmedAt: 'garbage' }),
      /confirmation's confirmedAt is not a time/,
    ],
    ['confirmedAt missing', sealed(header, parts.body, {}), /confirmedAt is not a time/],
    ['confirmedAt in the future', withConfirmation({ confirmedAt: inFuture }), /in the future/],
    [
      'confirmedAt before loadedAt',
      withConfirmation({ confirmedAt: monthAgo }),
      /confirmedAt is earlier than its loadedAt/,
    ],
    [
      'a line of another shape',
      sealed(
        header,
        Buffer.from(parts.body.toString().replace('["crm",', '[12345,')),
        confirmation,
      ),
      /a line of it is not what this service writes/,
    ],
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

t.test(
  'a week of quiet data: every confirmation recorded, the file served a week on',
  async (t) => {
    const DAY_MS = 24 * HOUR_MS
    const MAX_AGE_MS = 7 * DAY_MS
    const { path, metrics, swap, confirm } = await startWriter(t, { confirmIntervalMs: 5 })
    // Read eight days ago and unchanged since: the times lie in the past, the clock is real.
    const loadedAt = Date.now() - 8 * DAY_MS
    swap(buildSnapshot(richSnapshotRows('Leads'), { loadedAt: new Date(loadedAt), dataset: 'd' }))
    const fileTimes = async () => {
      const stored = await read(path)
      return {
        loadedAt: stored?.snapshot.loadedAt.getTime(),
        confirmedAt: stored?.confirmedAt.getTime(),
      }
    }
    await waitFor(async () => (await fileTimes()).confirmedAt === loadedAt, 'the first write')
    const unconfirmed = await readFile(path)
    // The feed confirms every second; here every six hours of the eight days, to a minute ago.
    let confirmations = 0
    for (let at = loadedAt + 6 * HOUR_MS; at < Date.now() - 60_000; at += 6 * HOUR_MS) {
      confirm(new Date(at))
      confirmations += 1
      await waitFor(async () => (await fileTimes()).confirmedAt === at, `the confirmation at ${at}`)
    }
    const last = new Date(loadedAt + confirmations * 6 * HOUR_MS)
    confirm(last)
    await waitFor(async () => (await fileTimes()).confirmedAt === last.getTime(), 'the last one')
    t.equal((await fileTimes()).loadedAt, loadedAt, 'loadedAt stays when the data were read')
    t.ok((await writesOf(metrics)) >= confirmations + 1, 'each confirmation written')

    const stored = await read(path)
    if (stored === undefined) throw new Error('the file was not read')
    // A feed whose database cannot be reached (nothing listens on port 1), never started.
    const feedOf = (snapshot: StoredSnapshot) => {
      const feed = createSnapshotFeed({
        readUrl: 'postgres://127.0.0.1:1/none',
        feedUrl: 'postgres://127.0.0.1:1/none',
        logger: pino({ level: 'silent' }),
        metrics: createMetrics({ defaultMetrics: false }),
        stored: { ...snapshot, maxAgeMs: MAX_AGE_MS },
      })
      t.teardown(() => feed.close())
      return feed
    }
    const served = feedOf(stored)
    t.ok(served.serveStored(), 'served with its data eight days old and confirmed recently')
    t.equal(served.origin(), 'file')
    t.equal(served.current(), stored.snapshot)

    // The same file never confirmed after its first write: older than the bound.
    await writeFile(path, unconfirmed)
    const stale = await read(path)
    if (stale === undefined) throw new Error('the file was not read')
    const refused = feedOf(stale)
    t.notOk(refused.serveStored(), 'last confirmed eight days ago: not served')
    t.equal(refused.origin(), undefined)
  },
)

t.test('what a killed write left beside the file is removed when the writer starts', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-stale-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const victim = join(dir, 'elsewhere')
  await writeFile(victim, "not the service's")
  await writeFile(join(dir, 'snapshot.0123456789abcdef.tmp'), 'half a file')
  await symlink(victim, join(dir, 'snapshot.fedcba9876543210.tmp'))
  // Not a write's file: another name, another file's.
  await writeFile(join(dir, 'snapshot.notes'), 'kept')
  await writeFile(join(dir, 'other.0123456789abcdef.tmp'), 'kept')
  const { logger, lines } = recordingLogger()
  const writer = startSnapshotFileWriter({
    path: join(dir, 'snapshot'),
    snapshots: {
      onSwap: () => () => true,
      origin: () => undefined,
      current: () => undefined,
      confirmedAt: () => undefined,
    },
    migrations: MIGRATIONS,
    serviceVersion: '9.9.9',
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
  })
  t.teardown(() => writer.close())
  await waitFor(async () => (await readdir(dir)).length === 3, 'the stale files removed')
  t.same((await readdir(dir)).sort(), ['elsewhere', 'other.0123456789abcdef.tmp', 'snapshot.notes'])
  t.equal(await readFile(victim, 'utf8'), "not the service's", "a link's target untouched")
  t.match(lines, [{ level: 30, msg: /interrupted write/ }], 'said at info')
})

t.test('the file being written is created afresh, never through a link at its name', async (t) => {
  // The name a write takes is random; here it is known in advance, as an attacker would need.
  const crypto = await import('node:crypto')
  const { startSnapshotFileWriter: startPredictableWriter } = await t.mockImport<
    typeof import('../../src/snapshot-file/snapshot-file-writer.js')
  >('../../src/snapshot-file/snapshot-file-writer.js', {
    'node:crypto': { ...crypto, randomBytes: () => Buffer.from('0123456789abcdef', 'hex') },
  })
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-link-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const decoy = join(dir, 'snapshot.ffffffffffffffff.tmp')
  await writeFile(decoy, 'stale')
  const metrics = createMetrics({ defaultMetrics: false })
  const listeners = new Set<(snapshot: Snapshot) => void>()
  const snapshot = richSnapshot()
  const writer = startPredictableWriter({
    path: join(dir, 'snapshot'),
    snapshots: {
      onSwap: (listener) => {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      origin: () => 'database',
      current: () => snapshot,
      confirmedAt: () => snapshot.loadedAt,
    },
    migrations: MIGRATIONS,
    serviceVersion: '9.9.9',
    logger: pino({ level: 'silent' }),
    metrics,
    minIntervalMs: 0,
  })
  t.teardown(() => writer.close())
  await waitFor(
    async () => !(await readdir(dir)).includes('snapshot.ffffffffffffffff.tmp'),
    'the start',
  )
  const victim = join(dir, 'victim')
  await writeFile(victim, "not the service's")
  await symlink(victim, join(dir, 'snapshot.0123456789abcdef.tmp'))
  for (const listener of listeners) listener(snapshot)
  await waitFor(async () => (await writesOf(metrics, 'error')) === 1, 'the write refused')
  t.equal(await readFile(victim, 'utf8'), "not the service's", 'nothing written through the link')
  t.equal(await writesOf(metrics), 0, 'no file written')
})
