/**
 * MIGRATE=auto with a hot standby in DATABASE_URL, against a real streaming
 * replica: migrations go to the primary through FEED_DATABASE_URL, and the
 * instance is ready once the standby has replayed them; without
 * FEED_DATABASE_URL the instance never writes to the standby, and waits, not
 * ready and saying which migrations are missing, until the primary has them.
 */
import t, { type Test } from 'tap'
import { migrateDatabase, readMigrationFiles } from '../../src/db/migrate.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { readMetric } from '../helpers/metrics.js'
import { createLogCapture, importSeeds, startTestService } from '../helpers/service.js'
import { runNode } from '../helpers/service-process.js'
import {
  createReplicatedDatabase,
  type ReplicatedDatabase,
  startStreamingReplica,
} from '../helpers/streaming-replica.js'
import { sleep, waitFor } from '../helpers/wait.js'

/** The standby lags by this, so that it is seen to lack what the primary was just given. */
const APPLY_DELAY_MS = 1_000
/** The service's minute of finding only a standby before it reads one, shortened. */
const STANDBY_MODE_AFTER_MS = 2_000

const replica = await startStreamingReplica({ applyDelayMs: APPLY_DELAY_MS })
t.teardown(() => replica.remove())
const migrationNames = (await readMigrationFiles()).map((file) => file.name)

/** The service in-process, reading the standby; its database helper writes to the primary. */
function startOnStandby(
  t: Test,
  db: ReplicatedDatabase,
  logs: ReturnType<typeof createLogCapture>,
  env: Record<string, string> = {},
) {
  return startTestService(t, {
    logs,
    db: { url: db.standbyUrl, name: db.name, sql: db.primary, adminUrl: replica.primary.adminUrl },
    env: { DATABASE_URL: db.standbyUrl, MIGRATE: 'auto', ...env },
    waitForSnapshot: false,
    // Without FEED_DATABASE_URL, a standby is read once taken for one on purpose: soon, here.
    standbyModeAfterMs: STANDBY_MODE_AFTER_MS,
  })
}

const logLines = (logs: ReturnType<typeof createLogCapture>) =>
  logs.lines.map((line) => JSON.parse(line) as { level: number; msg: string; reason?: string })

t.test(
  'with FEED_DATABASE_URL on the primary: migrated there, ready once the standby has replayed it',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica, { migrated: false })
    const logs = createLogCapture()
    const { url, service } = await startOnStandby(t, db, logs, {
      FEED_DATABASE_URL: db.primaryUrl,
    })
    await service.started
    const applied = await db.primary<{ name: string }[]>`
      select name from shell.schema_migrations order by name`
    t.same(
      applied.map((row) => row.name),
      migrationNames,
      'every migration applied on the primary',
    )
    await waitFor(async () => (await httpRequest(url, '/readyz')).status === 200, 'ready')
    const [waited] = logLines(logs).filter(
      (line) => line.msg === 'waiting for migrations; checking again',
    )
    t.match(
      waited?.reason,
      /not applied in DATABASE_URL: 001_schema\.sql/,
      'it waited for the standby to replay them, naming them',
    )
    t.equal(await readMetric(service.metrics.feedListening), 1, 'listening on the primary')
  },
)

t.test(
  'without FEED_DATABASE_URL, on a standby whose primary is not migrated: not ready, naming the migrations, until the primary is migrated and seeded',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica, { migrated: false })
    const logs = createLogCapture()
    const { url, token } = await startOnStandby(t, db, logs)
    let reason = ''
    await waitFor(async () => {
      reason = (await httpRequest(url, '/readyz')).json<{ reason: string }>().reason ?? ''
      return reason.startsWith('migrations not applied')
    }, 'the reason on /readyz')
    t.match(reason, migrationNames.join(', '), 'it names every missing migration')
    t.match(reason, /hot standby/, 'and says why they are not applied here')
    t.equal((await httpRequest(url, '/readyz')).status, 503, 'not ready')
    // A quiet period of a few checks (a second apart at most): each finds the same.
    await sleep(2_500)
    const waits = () =>
      logLines(logs).filter((line) => line.msg === 'waiting for migrations; checking again')
    t.equal(waits().length, 1, 'the wait is said once, not at every check')

    await migrateDatabase(db.primary)
    await importSeeds(db.primary)
    await waitFor(
      async () => (await httpRequest(url, '/readyz')).status === 200,
      'ready once the standby has replayed the migrations and the seeds',
    )
    // Ready may come once the migrations are replayed and before the seeds are: the feed's
    // periodic check (the standby refuses LISTEN) brings them in.
    let status = 0
    await waitFor(async () => {
      status = (await httpRequest(url, '/api/v1/shell/crm', bearer(await token()))).status
      return status === 200
    }, 'the seeded app served')
    t.equal(status, 200, 'the seeded app is served from the standby')

    const lines = logLines(logs)
    t.notOk(
      lines.some((line) => line.msg.startsWith('database not ready for migrations')),
      'no write was tried (one would have failed there, and been retried)',
    )
    t.ok(
      lines.some((line) => line.level === 40 && /FEED_DATABASE_URL/.test(line.msg)),
      'LISTEN refused, with FEED_DATABASE_URL named',
    )
  },
)

t.test(
  'DATABASE_URL with the standby first, then the primary: migrated, listening and read on the primary',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica, { migrated: false })
    const hosts = `127.0.0.1:${replica.standby.port},127.0.0.1:${replica.primary.port}`
    const databaseUrl = db.primaryUrl.replace(/@[^/]+\//, `@${hosts}/`)
    t.not(databaseUrl, db.primaryUrl, 'set-up: two hosts in the URL')
    const logs = createLogCapture()
    const { url, service } = await startTestService(t, {
      logs,
      db: { url: databaseUrl, name: db.name, sql: db.primary, adminUrl: replica.primary.adminUrl },
      env: { DATABASE_URL: databaseUrl, MIGRATE: 'auto' },
      waitForSnapshot: false,
    })
    await service.started
    const applied = await db.primary<{ name: string }[]>`
      select name from shell.schema_migrations order by name`
    t.same(
      applied.map((row) => row.name),
      migrationNames,
      'every migration applied on the primary, the second host',
    )
    await importSeeds(db.primary)
    await waitFor(async () => (await httpRequest(url, '/readyz')).status === 200, 'ready')
    await waitFor(async () => (await readMetric(service.metrics.feedListening)) === 1, 'LISTEN')
    const [standbyReads] = await db.standby<{ count: number }[]>`
      select count(*)::int as count from pg_stat_activity where application_name like 'shell-data%'`
    t.equal(standbyReads?.count, 0, 'no connection of the instance stays on the standby')
  },
)

t.test('shell-data migrate goes through FEED_DATABASE_URL when it is set', async (t) => {
  const db = await createReplicatedDatabase(t, replica, { migrated: false })
  const result = await runNode('src/cli/main.ts', ['migrate'], {
    DATABASE_URL: db.standbyUrl,
    FEED_DATABASE_URL: db.primaryUrl,
    LOG_LEVEL: 'warn',
  })
  t.equal(result.code, 0, result.stderr)
  t.match(result.stdout, `${migrationNames.length} migration(s) applied`)
  const [row] = await db.primary<{ count: number }[]>`
    select count(*)::int as count from shell.schema_migrations`
  t.equal(row?.count, migrationNames.length, 'applied on the primary')
})
