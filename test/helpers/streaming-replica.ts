import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chown, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { connectDatabase, type Sql } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import postgres from '../../src/db/postgres-driver.js'
import { readPrimaryWalEnd, readReplayState } from '../../src/db/wal-positions.js'
import { importSeeds } from './service.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'
import { type PrivatePostgres, startPrivatePostgres } from './test-postgres.js'
import { waitFor } from './wait.js'

const execFileAsync = promisify(execFile)

/** A primary and a hot standby that streams its WAL, both embedded servers of the test's own. */
export interface StreamingReplica {
  readonly primary: PrivatePostgres
  /** Read-only: LISTEN, writes and pg_current_xact_id() are refused there. */
  readonly standby: PrivatePostgres
  /** Resolves once the standby has replayed everything the primary had written when it was called. */
  caughtUp(): Promise<void>
  /**
   * Promotes the standby (`pg_promote()`, as a failover operator does) and resolves once it takes
   * writes. Its WAL receiver stops: it no longer follows `primary`, whatever state that is in.
   */
  promote(): Promise<void>
  /** Stops both and deletes their data; safe to call twice. */
  remove(): Promise<void>
}

export interface StreamingReplicaOptions {
  /**
   * recovery_min_apply_delay: the standby applies each commit this long after
   * the primary made it, so that it lags by a known amount.
   */
  readonly applyDelayMs?: number
  /**
   * The port the standby streams from, given the primary's: a proxy there can cut replication,
   * so that the primary commits what the standby never receives (a failover that loses commits).
   */
  readonly replicationPort?: (primaryPort: number) => Promise<number>
}

/**
 * A streaming replica as an operator makes one, without pg_basebackup: a new
 * primary is stopped (a clean shutdown, so its data folder is consistent),
 * its folder copied cold with owner and modes (`cp -a`: as root both servers
 * run as the postgres OS user, see src/embedded/), `standby.signal` added,
 * and the copy started with `primary_conninfo` once the primary runs again.
 * initdb's pg_hba.conf admits replication connections from 127.0.0.1 with a
 * password, and `wal_level=replica` is PostgreSQL's default (set here all
 * the same, since the standby depends on it).
 */
export async function startStreamingReplica(
  options: StreamingReplicaOptions = {},
): Promise<StreamingReplica> {
  const primary = await startPrivatePostgres({ settings: { wal_level: 'replica' } })
  let standby: PrivatePostgres | undefined
  try {
    await primary.stop()
    const { username, password } = new URL(primary.adminUrl)
    const replicationPort = (await options.replicationPort?.(primary.port)) ?? primary.port
    standby = await startPrivatePostgres({
      settings: {
        primary_conninfo: `host=127.0.0.1 port=${replicationPort} user=${username} password=${password} application_name=standby`,
        hot_standby: 'on',
        recovery_min_apply_delay: `${options.applyDelayMs ?? 0}ms`,
        // Reports its replay position to the primary often, so pg_stat_replication is current.
        wal_receiver_status_interval: '1s',
        // Connects again soon after the primary restarts (5 s by default), so an outage test
        // waits for the service, not for replication.
        wal_retrieve_retry_interval: '500ms',
      },
      async fillDataDir(dataDir, owner) {
        await execFileAsync('cp', ['-a', primary.dataDir, dataDir])
        const signal = join(dataDir, 'standby.signal')
        await writeFile(signal, '')
        if (owner !== null) await chown(signal, owner.uid, owner.gid)
        await primary.start()
      },
    })
  } catch (error) {
    await primary.remove()
    throw error
  }
  const made = standby
  const replica: StreamingReplica = {
    primary,
    standby: made,
    async caughtUp() {
      // WAL is the whole cluster's: asked in the database every cluster has.
      const onPrimary = postgres(primary.adminUrl, { max: 1, onnotice: () => {} })
      const onStandby = postgres(made.adminUrl, { max: 1, onnotice: () => {} })
      try {
        const written = await readPrimaryWalEnd(onPrimary)
        await waitFor(async () => {
          const { replayed } = await readReplayState(onStandby)
          return replayed !== null && replayed >= written
        }, 'the standby to replay the primary')
      } finally {
        await Promise.all([onPrimary.end(), onStandby.end()])
      }
    },
    async promote() {
      const onStandby = postgres(made.adminUrl, { max: 1, onnotice: () => {} })
      try {
        // Waits (60 s at most) until the promotion is complete: false if it is not by then.
        const [row] = await onStandby<
          { promoted: boolean }[]
        >`select pg_promote(true, 60) as promoted`
        if (row?.promoted !== true) throw new Error('the standby was not promoted within 60 s')
      } finally {
        await onStandby.end()
      }
    },
    async remove() {
      await Promise.all([made.remove(), primary.remove()])
    },
  }
  return replica
}

/** A database made on the primary, as its standby has it too. */
export interface ReplicatedDatabase {
  readonly name: string
  readonly primaryUrl: string
  readonly standbyUrl: string
  /** A writer's pool on the primary. */
  readonly primary: Sql
  /** A reader's pool on the standby. */
  readonly standby: Sql
}

/**
 * A streaming replica whose replication goes through a proxy: `cutReplication()` stops it for
 * good, so that the primary commits what the standby never receives (a failover that loses
 * commits). Removed, with the proxy, at teardown.
 */
export async function startCuttableReplica(t: {
  teardown(fn: () => unknown): void
}): Promise<StreamingReplica & { cutReplication(): void }> {
  let replication: TcpProxy | undefined
  const replica = await startStreamingReplica({
    async replicationPort(primaryPort) {
      replication = await startTcpProxy('127.0.0.1', primaryPort)
      return replication.port
    },
  })
  t.teardown(async () => {
    await replication?.close()
    await replica.remove()
  })
  return {
    ...replica,
    cutReplication() {
      replication?.hold()
      replication?.cut()
    },
  }
}

/** Which server answered `url`: its port, as the server itself reports it, and whether it is in recovery. */
export async function whoAnswers(
  url: string,
  options: postgres.Options<Record<string, never>> = {},
): Promise<{ port: number; inRecovery: boolean }> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5, ...options })
  try {
    const [row] = await sql<{ port: number; inRecovery: boolean }[]>`
      select current_setting('port')::int as port, pg_is_in_recovery() as "inRecovery"`
    if (row === undefined) throw new Error('no row')
    return row
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/**
 * A new database on the primary (migrated and seeded unless told otherwise),
 * once the standby has replayed it; its pools are closed at teardown.
 */
export async function createReplicatedDatabase(
  t: { teardown(fn: () => unknown): void },
  replica: StreamingReplica,
  options: { migrated?: boolean } = {},
): Promise<ReplicatedDatabase> {
  const name = `shell_standby_${randomBytes(4).toString('hex')}`
  const admin = postgres(replica.primary.adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database "${name}"`)
  } finally {
    await admin.end()
  }
  const primaryUrl = replica.primary.urlFor(name)
  const standbyUrl = replica.standby.urlFor(name)
  const primary = connectDatabase(primaryUrl, { max: 2, applicationName: 'test-writer' })
  t.teardown(() => primary.end({ timeout: 1 }))
  if (options.migrated ?? true) {
    await migrateDatabase(primary)
    await importSeeds(primary)
  }
  await replica.caughtUp()
  const standby = connectDatabase(standbyUrl, { max: 4, applicationName: 'test-reader' })
  t.teardown(() => standby.end({ timeout: 1 }))
  return { name, primaryUrl, standbyUrl, primary, standby }
}
