/**
 * Behind a real PgBouncer in transaction mode (Debian's package; .ci/run
 * installs it): reloads work through it, and LISTEN through it, which cannot
 * work there, is detected, said once, and replaced by checking the database,
 * so the snapshot still follows it.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import { resolvePostgresRuntime } from '../../src/embedded/postgres-runtime.js'
import { createSnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics } from '../../src/metrics.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'

const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path))
const skip = PGBOUNCER === undefined ? 'no pgbouncer here (apt-get install pgbouncer)' : false

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return condition()
}

/**
 * PgBouncer in transaction mode in front of the test database, as another
 * user when we are root (it refuses to run as root); its URL has the same
 * user and password as the database's.
 */
async function startPgBouncer(
  t: { teardown(fn: () => unknown): void },
  db: TestDatabase,
): Promise<string> {
  const target = new URL(db.url)
  const home = await mkdtemp(join(tmpdir(), 'shell-data-pgbouncer-'))
  const port = await findFreePort()
  const user = decodeURIComponent(target.username)
  await writeFile(
    join(home, 'userlist.txt'),
    `"${user}" "${decodeURIComponent(target.password)}"\n`,
  )
  await writeFile(
    join(home, 'pgbouncer.ini'),
    [
      '[databases]',
      `${db.name} = host=${target.hostname} port=${target.port} dbname=${db.name}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(home, 'userlist.txt')}`,
      'pool_mode = transaction',
      // Fewer server connections than the pool's: transactions move between them.
      'default_pool_size = 2',
      `logfile = ${join(home, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  )
  const { user: osUser } = await resolvePostgresRuntime(pino({ level: 'silent' }))
  if (osUser !== null) {
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) {
      await chown(join(home, file), osUser.uid, osUser.gid)
    }
  }
  const child: ChildProcess = spawn(PGBOUNCER ?? 'pgbouncer', [join(home, 'pgbouncer.ini')], {
    ...(osUser === null ? {} : { uid: osUser.uid, gid: osUser.gid }),
    cwd: home,
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  t.teardown(async () => {
    child.kill('SIGINT')
    await exited
    await rm(home, { recursive: true, force: true })
  })
  const accepting = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => resolve(socket.end() && true))
      socket.once('error', () => resolve(false))
    })
  if (!(await waitUntil(accepting, 10_000))) throw new Error('pgbouncer did not start')
  const url = new URL(db.url)
  url.port = String(port)
  return url.toString()
}

t.test('reloads through PgBouncer in transaction mode', { skip }, async (t) => {
  const db = await createTestDatabase(t)
  const bouncerUrl = await startPgBouncer(t, db)
  const pool = connectDatabase(bouncerUrl, { max: 4 })
  t.teardown(() => pool.end({ timeout: 1 }))
  const metrics = createMetrics({ defaultMetrics: false })
  // Listening directly, as FEED_DATABASE_URL would have it: only the reloads go through the pooler.
  const feed = createSnapshotFeed({
    sql: pool,
    databaseUrl: bouncerUrl,
    feedUrl: db.url,
    logger: pino({ level: 'silent' }),
    metrics,
  })
  feed.start()
  t.teardown(() => feed.close())
  for (let change = 0; change < 20; change += 1) {
    await db.sql`insert into shell.apps (app_key, name) values (${`app-${change}`}, 'App')`
    t.ok(
      await waitUntil(() => feed.current()?.appKeys.length === change + 1, 5_000),
      `change ${change} reached the snapshot`,
    )
  }
  const errors = (await metrics.snapshotReloads.get()).values.find(
    (value) => value.labels.result === 'error',
  )
  t.equal(errors?.value ?? 0, 0, 'no reload failed (no prepared statement went missing)')
})

t.test(
  'LISTEN through PgBouncer in transaction mode: detected, said once, and the snapshot still follows',
  { skip },
  async (t) => {
    const db = await createTestDatabase(t)
    const bouncerUrl = await startPgBouncer(t, db)
    const pool = connectDatabase(bouncerUrl, { max: 4 })
    t.teardown(() => pool.end({ timeout: 1 }))
    const lines: { level: number; msg: string }[] = []
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    )
    const metrics = createMetrics({ defaultMetrics: false })
    const listening = async () => (await metrics.feedListening.get()).values[0]?.value
    const feed = createSnapshotFeed({
      sql: pool,
      databaseUrl: bouncerUrl,
      feedUrl: bouncerUrl,
      logger,
      metrics,
      probeIntervalMs: 200,
      probeTimeoutMs: 300,
      unheardCheckIntervalMs: 300,
    })
    feed.start()
    t.teardown(() => feed.close())
    t.ok(await waitUntil(() => feed.current() !== undefined, 10_000), 'a first snapshot')
    const warnedAboutFeedUrl = () =>
      lines.filter((line) => line.level === 40 && line.msg.includes('FEED_DATABASE_URL'))
    t.ok(
      await waitUntil(() => warnedAboutFeedUrl().length > 0, 10_000),
      'a warning names FEED_DATABASE_URL',
    )
    // Many probe intervals later: still one warning, and no reconnect every probe.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    t.equal(warnedAboutFeedUrl().length, 1, 'said once')
    t.ok(lines.filter((line) => line.level === 40).length <= 3, 'then quiet')
    t.equal(await listening(), 0, 'shell_feed_listening is 0: nothing is heard')

    await db.sql`insert into shell.apps (app_key, name) values ('crm', 'CRM')`
    t.ok(
      await waitUntil(() => feed.current()?.appKeys.length === 1, 5_000),
      'a change reaches the snapshot all the same, by the periodic check',
    )
  },
)
