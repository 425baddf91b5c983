/**
 * The replay wait never waits for a position of a timeline the standby has
 * left. Real servers: a primary and its standby, replication cut, the primary
 * writing on (commits the standby never receives, far past anything the
 * standby will replay), the standby promoted, and a new standby of it. The
 * old primary, still answering (the listening connection not yet moved),
 * names a position of the old timeline, above where the new one started.
 */
import { execFile } from 'node:child_process'
import { chown, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pino from 'pino'
import t from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { readPrimaryWalTarget, readReplayState } from '../../src/db/wal-positions.js'
import { createReplayWait } from '../../src/feed/replay-wait.js'
import { createMetrics } from '../../src/metrics.js'
import { startCuttableReplica } from '../helpers/streaming-replica.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'

const execFileAsync = promisify(execFile)

t.test('a position of the old timeline is not waited for', async (t) => {
  const replica = await startCuttableReplica(t)
  const oldPrimary = postgres(replica.primary.adminUrl, { max: 1, onnotice: () => {} })
  t.teardown(() => oldPrimary.end({ timeout: 1 }))
  await replica.caughtUp()
  replica.cutReplication()
  // Some 20 MB of WAL the standby never receives: the old timeline runs far ahead.
  await oldPrimary`create table filler as select repeat('x', 1000) as x from generate_series(1, 20000)`

  const promoted = postgres(replica.standby.adminUrl, { max: 1, onnotice: () => {} })
  await promoted`select pg_promote(true)`
  await promoted`checkpoint`
  await promoted.end()
  await replica.standby.stop()
  const { username, password } = new URL(replica.standby.adminUrl)
  // A standby of the promoted server, made as streaming-replica.ts makes one.
  const standby = await startPrivatePostgres({
    settings: {
      primary_conninfo: `host=127.0.0.1 port=${replica.standby.port} user=${username} password=${password}`,
      hot_standby: 'on',
    },
    async fillDataDir(dataDir, owner) {
      await execFileAsync('cp', ['-a', replica.standby.dataDir, dataDir])
      const signal = join(dataDir, 'standby.signal')
      await writeFile(signal, '')
      if (owner !== null) await chown(signal, owner.uid, owner.gid)
      await replica.standby.start()
    },
  })
  t.teardown(() => standby.remove())
  const onStandby = postgres(standby.adminUrl, { max: 1, onnotice: () => {} })
  t.teardown(() => onStandby.end({ timeout: 1 }))

  const target = await readPrimaryWalTarget(oldPrimary)
  const state = await readReplayState(onStandby)
  t.ok(state.inRecovery, 'set-up: a standby')
  t.equal(target.timeline, 1, 'set-up: the old primary is on the first timeline')
  t.equal(state.timeline, 2, 'set-up: the standby replays the new one')
  t.ok(
    state.replayed !== null && state.replayed < target.position,
    'set-up: the old timeline ends above the standby',
  )

  const wait = createReplayWait({
    onStandby: (read) => read(onStandby),
    onPrimary: (read) => read(oldPrimary),
    logger: pino({ level: 'silent' }),
    metrics: createMetrics({ defaultMetrics: false }),
    signal: new AbortController().signal,
    // Short: a wait that would give up on the position does so soon, and says so.
    maxWaitMs: 1_000,
  })
  await wait.untilReplayed(true)
  t.notOk(wait.isBehind(), 'the standby is not found behind a position of another timeline')
})
