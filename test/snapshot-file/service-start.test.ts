/**
 * The service with SNAPSHOT_FILE, as an operator meets it: the file written after a change; a
 * restart with the database up ready only on the database's current data; a restart with the
 * database down ready on the file, with the same ETags, then caught up when it returns; a file
 * too old not served.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { readMetric } from '../helpers/metrics.js'
import {
  createLogCapture,
  createSeededDatabase,
  importSeeds,
  startTestService,
  type TestService,
} from '../helpers/service.js'
import { sealed, splitFile } from '../helpers/snapshot-file.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'
import { waitFor } from '../helpers/wait.js'

const logs = createLogCapture()
/** How long the data stay unchanged in the quiet test: the age bound is set just under it. */
const QUIET_MS = 6_000

async function snapshotFileIn(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'shell-data-service-file-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return join(dir, 'snapshot')
}

const fileWrites = (service: TestService) =>
  readMetric(service.service.metrics.snapshotFileWrites, { result: 'success' })

interface Readiness {
  readonly status: number
  readonly body: { snapshot?: { source?: string; loadedAt?: string; confirmedAt?: string } }
}

/** A private PostgreSQL, migrated and seeded, that a test can stop. */
async function startStoppableDatabase(t: Test) {
  const server = await startPrivatePostgres()
  t.teardown(() => server.remove())
  const writer = connectDatabase(server.adminUrl, { max: 1, applicationName: 'test-writer' })
  await migrateDatabase(writer)
  await importSeeds(writer)
  await writer.end({ timeout: 1 })
  return server
}

/** The times a snapshot file records, as milliseconds. */
async function fileTimes(file: string): Promise<{ loadedAt: number; confirmedAt: number }> {
  const parts = splitFile(await readFile(file))
  return {
    loadedAt: Date.parse(JSON.parse(parts.header.toString()).loadedAt),
    confirmedAt: Date.parse(JSON.parse(parts.confirmation.toString()).confirmedAt),
  }
}

async function readiness(url: string): Promise<Readiness> {
  const response = await httpRequest(url, '/readyz').catch(() => undefined)
  return { status: response?.status ?? 0, body: response?.status ? response.json() : {} }
}

t.test(
  "with the database up, a restart is ready on its current data, never the file's",
  async (t) => {
    const db = await createSeededDatabase(t)
    const file = await snapshotFileIn(t)
    const env = { SNAPSHOT_FILE: file }
    const first = await startTestService(t, { logs, db, env })
    await waitFor(async () => (await fileWrites(first)) >= 1, 'the first snapshot written')
    await db.sql`update shell.apps set name = 'CRM before' where app_key = 'crm'`
    await waitFor(async () => (await fileWrites(first)) >= 2, 'the change written')
    const linesBefore = logs.lines.length
    await first.close()
    // The writer closes after the feed: what a reload ending in the shutdown reads is written.
    const released = logs.lines
      .slice(linesBefore)
      .map((line) => JSON.parse(line) as { msg: string; resource?: string })
      .filter((line) => line.msg === 'released')
      .map((line) => line.resource)
    t.ok(
      released.indexOf('snapshot feed') < released.indexOf('snapshot file writer') &&
        released.indexOf('snapshot feed') !== -1,
      `the feed released before the writer: ${released.join(', ')}`,
    )

    await db.sql`update shell.apps set name = 'CRM after' where app_key = 'crm'`
    const second = await startTestService(t, {
      logs,
      db,
      env,
      jwks: first.jwks,
      waitForSnapshot: false,
    })
    await waitFor(async () => (await readiness(second.url)).status === 200, 'ready')
    const shell = await httpRequest(second.url, '/api/v1/shell/crm', bearer(await second.token()))
    t.equal(
      shell.json<{ app: { name: string } }>().app.name,
      'CRM after',
      'the first answer is current',
    )
    t.match((await readiness(second.url)).body, { snapshot: { source: 'database' } })
    t.ok(
      logs.lines.some((line) => /"msg":"snapshot file read"/.test(line)),
      'it read the file first',
    )
  },
)

t.test(
  'with the database down, ready on the file with the same ETags, caught up when it returns',
  async (t) => {
    const server = await startPrivatePostgres()
    t.teardown(() => server.remove())
    const writer = connectDatabase(server.adminUrl, { max: 1, applicationName: 'test-writer' })
    t.teardown(() => writer.end({ timeout: 1 }))
    await migrateDatabase(writer)
    await importSeeds(writer)
    const db = await createSeededDatabase(t)
    const jwks = await startJwksServer(t)
    const file = await snapshotFileIn(t)
    const env = { DATABASE_URL: server.adminUrl, SNAPSHOT_FILE: file }

    const first = await startTestService(t, { logs, db, jwks, env })
    const token = await first.token({ roles: ['crm-sales'] })
    const before = await httpRequest(first.url, '/api/v1/shell/crm', bearer(token))
    await waitFor(async () => (await fileWrites(first)) >= 1, 'the snapshot written')
    await first.close()
    await writer.end({ timeout: 1 })
    await server.stop()

    const second = await startTestService(t, { logs, db, jwks, env, waitForSnapshot: false })
    await waitFor(async () => (await readiness(second.url)).status === 200, 'ready on the file')
    t.match((await readiness(second.url)).body, { snapshot: { source: 'file', apps: 1 } })
    t.equal(
      await readMetric(second.service.metrics.snapshotFromFile),
      1,
      'shell_snapshot_from_file',
    )
    const fromFile = await httpRequest(second.url, '/api/v1/shell/crm', bearer(token))
    t.equal(fromFile.status, 200)
    t.equal(fromFile.headers.etag, before.headers.etag, 'the same ETag as before the restart')
    t.equal(fromFile.text, before.text, 'and the same bytes')

    await server.start()
    const back = connectDatabase(server.adminUrl, { max: 1, applicationName: 'test-writer' })
    t.teardown(() => back.end({ timeout: 1 }))
    await back`update shell.apps set name = 'CRM again' where app_key = 'crm'`
    await waitFor(
      async () => (await readiness(second.url)).body.snapshot?.source === 'database',
      'caught up with the database',
      30_000,
    )
    await waitFor(async () => {
      const shell = await httpRequest(second.url, '/api/v1/shell/crm', bearer(token))
      return shell.json<{ app: { name: string } }>().app.name === 'CRM again'
    }, 'the change made while it served the file')
    t.equal(await readMetric(second.service.metrics.snapshotFromFile), 0)
  },
)

t.test('a file older than SNAPSHOT_FILE_MAX_AGE_S is not served', async (t) => {
  const server = await startPrivatePostgres()
  t.teardown(() => server.remove())
  const writer = connectDatabase(server.adminUrl, { max: 1, applicationName: 'test-writer' })
  await migrateDatabase(writer)
  await importSeeds(writer)
  await writer.end({ timeout: 1 })
  const db = await createSeededDatabase(t)
  const file = await snapshotFileIn(t)
  const env = { DATABASE_URL: server.adminUrl, SNAPSHOT_FILE: file }
  const first = await startTestService(t, { logs, db, env })
  await waitFor(async () => (await fileWrites(first)) >= 1, 'the snapshot written')
  await first.close()
  await server.stop()

  const linesBefore = logs.lines.length
  const second = await startTestService(t, {
    logs,
    db,
    jwks: first.jwks,
    env: { ...env, SNAPSHOT_FILE_MAX_AGE_S: '0' },
    waitForSnapshot: false,
  })
  await waitFor(
    () =>
      logs.lines
        .slice(linesBefore)
        .some((line) => /longer ago than SNAPSHOT_FILE_MAX_AGE_S/.test(line)),
    'the file said to be too old',
  )
  t.equal((await readiness(second.url)).status, 503, 'not ready')
})

t.test(
  'data unchanged for longer than the age bound, confirmed recently: served with the database down',
  async (t) => {
    const server = await startStoppableDatabase(t)
    const db = await createSeededDatabase(t)
    const file = await snapshotFileIn(t)
    const env = { DATABASE_URL: server.adminUrl, SNAPSHOT_FILE: file }
    // The feed's check confirms every second; the file records it ten times as often as in
    // service, so that quiet data outlive a short bound within a test (a week, scaled down).
    const first = await startTestService(t, { logs, db, env, snapshotFileConfirmIntervalMs: 100 })
    await waitFor(async () => {
      const times = await fileTimes(file).catch(() => undefined)
      return times !== undefined && times.confirmedAt - times.loadedAt >= QUIET_MS
    }, `the file confirmed ${QUIET_MS} ms after its data were read`)
    const ready = (await readiness(first.url)).body.snapshot
    t.ok(
      Date.parse(ready?.confirmedAt ?? '') - Date.parse(ready?.loadedAt ?? '') >= QUIET_MS,
      '/readyz: confirmed long after its data were read',
    )
    await first.close()
    await server.stop()

    const { loadedAt, confirmedAt } = await fileTimes(file)
    // Shorter than the quiet: the data are older than the bound, their confirmation is not.
    const maxAgeS = Math.floor((confirmedAt - loadedAt) / 1000)
    const second = await startTestService(t, {
      logs,
      db,
      jwks: first.jwks,
      env: { ...env, SNAPSHOT_FILE_MAX_AGE_S: String(maxAgeS) },
      waitForSnapshot: false,
    })
    await waitFor(async () => (await readiness(second.url)).status === 200, 'ready on the file')
    const served = (await readiness(second.url)).body.snapshot
    t.match(served, {
      source: 'file',
      loadedAt: new Date(loadedAt).toISOString(),
      confirmedAt: new Date(confirmedAt).toISOString(),
    })
    t.ok(Date.now() - loadedAt > maxAgeS * 1000, `its data were read over ${maxAgeS} s ago`)
  },
)

t.test(
  'a file with a header field of the wrong type stops nothing: /readyz 503, not 500',
  async (t) => {
    const server = await startStoppableDatabase(t)
    const db = await createSeededDatabase(t)
    const file = await snapshotFileIn(t)
    const env = { DATABASE_URL: server.adminUrl, SNAPSHOT_FILE: file }
    const first = await startTestService(t, { logs, db, env })
    await waitFor(async () => (await fileWrites(first)) >= 1, 'the snapshot written')
    await first.close()
    await server.stop()
    const parts = splitFile(await readFile(file))
    const header = JSON.parse(parts.header.toString())
    const confirmation = JSON.parse(parts.confirmation.toString())
    for (const [what, fields, reason] of [
      ['migrations null', { migrations: null }, /migrations is not a list/],
      ['loadedAt garbage', { loadedAt: 'garbage' }, /loadedAt is not a time/],
      ['loadedAt today on an old file', { loadedAt: new Date().toISOString() }, /earlier than/],
    ] as const) {
      await writeFile(file, sealed({ ...header, ...fields }, parts.body, confirmation))
      const linesBefore = logs.lines.length
      const service = await startTestService(t, {
        logs,
        db,
        jwks: first.jwks,
        env,
        waitForSnapshot: false,
      })
      const said = () => logs.lines.slice(linesBefore).find((line) => reason.test(line))
      await waitFor(() => said() !== undefined, `${what}: said`)
      t.match(
        JSON.parse(said() ?? '{}'),
        { level: 40, file },
        `${what}: a warn line naming the file`,
      )
      await waitFor(
        () => logs.lines.slice(linesBefore).some((line) => /database not ready/.test(line)),
        `${what}: the database tried`,
      )
      t.equal((await readiness(service.url)).status, 503, `${what}: not ready, and no 500`)
      await service.close()
    }
  },
)

t.test('no log line holds a token', async (t) => {
  t.same(logs.leaks(), [])
})
