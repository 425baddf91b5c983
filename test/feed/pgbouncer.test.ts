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
import { findFreePort } from '../../src/embedded/embedded.js'
import { resolvePostgresRuntime } from '../../src/embedded/postgres-runtime.js'
import { createSnapshotFeed } from '../../src/feed/snapshot-feed.js'
import { createMetrics } from '../../src/metrics.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { readMetric } from '../helpers/metrics.js'
import { waitFor } from '../helpers/wait.js'

const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path))
const skip = PGBOUNCER === undefined ? 'no pgbouncer here (apt-get install pgbouncer)' : false

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
  await waitFor(accepting, 'pgbouncer accepting connections', 10_000)
  const url = new URL(db.url)
  url.port = String(port)
  return url.toString()
}

t.test('reloads through PgBouncer in transaction mode', { skip }, async (t) => {
  const db = await createTestDatabase(t)
  const bouncerUrl = await startPgBouncer(t, db)
  const metrics = createMetrics({ defaultMetrics: false })
  // Listening directly, as FEED_DATABASE_URL would have it: only the reloads go through the pooler.
  const feed = createSnapshotFeed({
    readUrl: bouncerUrl,
    feedUrl: db.url,
    logger: pino({ level: 'silent' }),
    metrics,
  })
  feed.start()
  t.teardown(() => feed.close())
  for (let change = 0; change < 20; change += 1) {
    await db.sql`insert into shell.apps (app_key, name) values (${`app-${change}`}, 'App')`
    await waitFor(
      () => feed.current()?.appKeys.length === change + 1,
      `change ${change} in the snapshot`,
      5_000,
    )
  }
  t.equal(
    await readMetric(metrics.snapshotReloads, { result: 'error' }),
    0,
    'no reload failed (no prepared statement went missing)',
  )
})

t.test(
  'LISTEN through PgBouncer in transaction mode: the check follows the database, and it is said once',
  { skip },
  async (t) => {
    const db = await createTestDatabase(t)
    const bouncerUrl = await startPgBouncer(t, db)
    const lines: { level: number; msg: string }[] = []
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    )
    const metrics = createMetrics({ defaultMetrics: false })
    const feed = createSnapshotFeed({
      readUrl: bouncerUrl,
      feedUrl: bouncerUrl,
      logger,
      metrics,
      checkIntervalMs: 200,
    })
    feed.start()
    t.teardown(() => feed.close())
    await waitFor(() => feed.current() !== undefined, 'a first snapshot', 10_000)
    const warnedAboutFeedUrl = () =>
      lines.filter((line) => line.level === 40 && line.msg.includes('FEED_DATABASE_URL'))
    const addApp = async (appKey: string) => {
      const count = feed.current()?.appKeys.length ?? 0
      await db.sql`insert into shell.apps (app_key, name) values (${appKey}, 'App')`
      await waitFor(
        () => feed.current()?.appKeys.length === count + 1,
        `${appKey} in the snapshot, by the periodic check`,
        5_000,
      )
    }
    // Each change is found by the check, unannounced: once, the connection is taken to have
    // gone silent; again on a fresh connection, it is the pattern of a pooler, said once.
    for (let change = 0; warnedAboutFeedUrl().length === 0; change += 1) {
      if (change === 20) throw new Error('no warning after 20 unannounced changes')
      await addApp(`app-${change}`)
    }
    t.ok(
      lines.some((line) => /went silent/.test(line.msg)),
      'first taken for a silent connection',
    )
    t.equal(
      await readMetric(metrics.feedListening),
      0,
      'shell_feed_listening is 0: nothing is heard',
    )
    for (let change = 0; change < 5; change += 1) await addApp(`more-${change}`)
    t.equal(warnedAboutFeedUrl().length, 1, 'said once')
    t.ok(lines.filter((line) => line.level === 40).length <= 3, 'and otherwise quiet')
  },
)
