/**
 * Snapshots read from a real hot standby: a streaming replica of an embedded
 * primary, made in the test, that applies each commit 1.5 s after the
 * primary made it, with LISTEN on the primary (FEED_DATABASE_URL). A commit
 * is served, and its event sent, within that lag plus a margin, never a
 * check period later; a burst folds into one more reload; a standby further
 * behind than the wait is read anyway and the check follows up; a primary is
 * not waited for.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { createTokenVerifier } from '../../src/auth/verify-token.js'
import { loadConfig } from '../../src/config/config.js'
import {
  createSnapshotFeed,
  type SnapshotFeed,
  type SnapshotFeedOptions,
} from '../../src/feed/snapshot-feed.js'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { buildCaller } from '../../src/snapshot/caller.js'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { readMetric, snapshotAgeSeconds } from '../helpers/metrics.js'
import { signCaller } from '../helpers/service.js'
import { createReplicatedDatabase, startStreamingReplica } from '../helpers/streaming-replica.js'
import { sleep, waitFor } from '../helpers/wait.js'
import { callerWith } from '../snapshot/rows.js'

/** The standby's known lag: recovery_min_apply_delay. */
const APPLY_DELAY_MS = 1_500
/**
 * What serving may take past the lag: the wait's polls (100 ms apart at
 * most), a reload, the HTTP poll; generous for a shared 2-core machine, and
 * far below the check period below.
 */
const MARGIN_MS = 1_000
/**
 * The check's period in these tests: without the wait, a notified reload
 * would read the standby stale and the change would be served this late.
 */
const LONG_CHECK_MS = 10_000
/** Commits timed in the main test: one could fall just before a check by chance, not three. */
const ROUNDS = 3

const silent = pino({ level: 'silent' })
const replica = await startStreamingReplica({ applyDelayMs: APPLY_DELAY_MS })
t.teardown(() => replica.remove())

interface LogLine {
  readonly level: number
  readonly msg: string
}

function startFeed(
  t: Test,
  readUrl: string,
  feedUrl: string,
  overrides: Partial<SnapshotFeedOptions> = {},
): { feed: SnapshotFeed; metrics: Metrics; lines: LogLine[] } {
  const lines: LogLine[] = []
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  const metrics = createMetrics({ defaultMetrics: false })
  const feed = createSnapshotFeed({ readUrl, feedUrl, logger, metrics, ...overrides })
  feed.start()
  t.teardown(() => feed.close())
  return { feed, metrics, lines }
}

/** The name of app `crm` in the snapshot in service. */
function appNameOf(feed: SnapshotFeed): string | undefined {
  const variant = feed.current()?.app('crm')?.variant(callerWith([]), 'en')
  const head = variant?.head.toString()
  return head === undefined ? undefined : JSON.parse(`${head}null}`).app.name
}

/** The waits observed so far, and their total in seconds. */
async function replayWaits(metrics: Metrics): Promise<{ count: number; sum: number }> {
  const { values } = await metrics.feedReplayWait.get()
  const find = (name: string) => values.find((value) => value.metricName === name)?.value ?? 0
  return {
    count: find('shell_feed_replay_wait_seconds_count'),
    sum: find('shell_feed_replay_wait_seconds_sum'),
  }
}

/** The HTTP face on a feed of the test's own (the service builds its feed with a 1 s check). */
async function serveFeed(t: Test, feed: SnapshotFeed, metrics: Metrics) {
  const jwks = await startJwksServer(t)
  const config = loadConfig({ OIDC_ISSUER: jwks.issuer, OIDC_AUDIENCE: 'shell-data' })
  if (config.oidc === null) throw new Error('no OIDC configuration')
  const verifier = createTokenVerifier({
    oidc: config.oidc,
    toCaller: buildCaller,
    cacheMax: 10,
    failureLog: false,
    logger: silent,
    metrics,
  })
  const app = buildApp({
    logger: silent,
    metrics,
    verifier,
    snapshots: feed,
    logRequests: false,
    eventStreamsMax: 10,
    isShuttingDown: () => false,
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => {
    await app.close()
    verifier.close()
  })
  return { url, token: await signCaller(jwks, { sub: 'reader' }) }
}

t.test(
  'a commit on the primary is served from the standby within its lag, never a check period later',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    const { feed, metrics } = startFeed(t, db.standbyUrl, db.primaryUrl, {
      checkIntervalMs: LONG_CHECK_MS,
    })
    await waitFor(async () => (await readMetric(metrics.feedListening)) === 1, 'LISTEN')
    await waitFor(() => appNameOf(feed) === 'CRM', 'the first snapshot, from the standby')
    const { url, token } = await serveFeed(t, feed, metrics)
    const stream = await openEventStream(url, '/api/v1/shell/crm/events', {
      authorization: `Bearer ${token}`,
    })
    t.teardown(() => stream.close())
    await stream.waitForEvents(1)
    const etagNow = async () =>
      String((await httpRequest(url, '/api/v1/shell/crm', bearer(token))).headers.etag)

    const servedMs: number[] = []
    for (let round = 1; round <= ROUNDS; round += 1) {
      const before = await etagNow()
      await db.primary`update shell.apps set name = ${`CRM ${round}`} where app_key = 'crm'`
      const committedAt = performance.now()
      const [getMs, eventMs] = await Promise.all([
        waitFor(
          async () => (await etagNow()) !== before,
          `round ${round}: a new ETag`,
          APPLY_DELAY_MS + LONG_CHECK_MS + 5_000,
        ).then(() => performance.now() - committedAt),
        stream
          .waitForEvents(1 + round, APPLY_DELAY_MS + LONG_CHECK_MS + 5_000)
          .then(() => performance.now() - committedAt),
      ])
      t.equal(appNameOf(feed), `CRM ${round}`, `round ${round}: the commit is in the snapshot`)
      const event = stream.events[round]
      t.same(JSON.parse(event?.data ?? '{}'), { etag: await etagNow() }, 'the event has the tag')
      t.ok(
        getMs >= APPLY_DELAY_MS - 100,
        `round ${round}: the standby lags (${Math.round(getMs)} ms)`,
      )
      t.ok(
        getMs <= APPLY_DELAY_MS + MARGIN_MS,
        `round ${round}: GET serves it ${Math.round(getMs)} ms after the commit, within ${APPLY_DELAY_MS} + ${MARGIN_MS} ms`,
      )
      t.ok(
        eventMs <= APPLY_DELAY_MS + MARGIN_MS,
        `round ${round}: its event ${Math.round(eventMs)} ms after the commit`,
      )
      servedMs.push(getMs)
    }
    t.comment(`served after ${servedMs.map((ms) => Math.round(ms)).join(', ')} ms`)
    const waits = await replayWaits(metrics)
    t.ok(waits.count >= ROUNDS + 1, `each wait observed, the first load's too (${waits.count})`)
    t.ok(
      waits.sum >= (ROUNDS * (APPLY_DELAY_MS - 200)) / 1000,
      `the waits add up to the lag of each commit (${waits.sum.toFixed(2)} s)`,
    )
  },
)

t.test(
  'a burst during a wait folds into one more reload, which waits for the latest commit',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    let reads = 0
    const { feed, metrics } = startFeed(t, db.standbyUrl, db.primaryUrl, {
      checkIntervalMs: LONG_CHECK_MS,
      onRead: () => {
        reads += 1
      },
    })
    await waitFor(async () => (await readMetric(metrics.feedListening)) === 1, 'LISTEN')
    await waitFor(() => appNameOf(feed) === 'CRM', 'the first snapshot')
    const readsBefore = reads
    // Twenty commits, one after the other: all announced while the first one's wait runs.
    for (let commit = 1; commit <= 20; commit += 1) {
      await db.primary`update shell.apps set name = ${`CRM ${commit}`} where app_key = 'crm'`
    }
    const lastCommittedAt = performance.now()
    await waitFor(() => appNameOf(feed) === 'CRM 20', 'the last commit', LONG_CHECK_MS + 5_000)
    const servedMs = performance.now() - lastCommittedAt
    t.ok(
      servedMs <= APPLY_DELAY_MS + MARGIN_MS,
      `the last commit served ${Math.round(servedMs)} ms after it, not by the check: a reload waited for it`,
    )
    // A quiet period: the reload that the notifications during the first wait asked for runs.
    await sleep(APPLY_DELAY_MS)
    const used = reads - readsBefore
    // The first reload's wait ends as the standby applies the first commit; the others, made
    // within milliseconds of it, are applied with it: that read may find the last commit.
    t.ok(used >= 1 && used <= 3, `20 commits, ${used} reloads`)
  },
)

t.test(
  'a standby behind by more than the wait is read anyway, said once, and the check follows up',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    const waitMaxMs = 300
    const checkMs = 500
    const { feed, metrics, lines } = startFeed(t, db.standbyUrl, db.primaryUrl, {
      checkIntervalMs: checkMs,
      replayWaitMaxMs: waitMaxMs,
    })
    await waitFor(async () => (await readMetric(metrics.feedListening)) === 1, 'LISTEN')
    await waitFor(() => appNameOf(feed) === 'CRM', 'the first snapshot')
    for (let round = 1; round <= 2; round += 1) {
      await db.primary`update shell.apps set name = ${`CRM ${round}`} where app_key = 'crm'`
      const committedAt = performance.now()
      await waitFor(() => appNameOf(feed) === `CRM ${round}`, `round ${round}, by the check`)
      const servedMs = performance.now() - committedAt
      t.ok(
        servedMs <= APPLY_DELAY_MS + checkMs + MARGIN_MS,
        `round ${round}: served ${Math.round(servedMs)} ms after the commit`,
      )
    }
    // A quiet period of a few checks, which would find the last change unannounced.
    await sleep(3 * checkMs)
    const gaveUp = lines.filter((line) => line.level === 40 && /has not replayed/.test(line.msg))
    t.equal(gaveUp.length, 1, 'the standby being behind is said once')
    t.notOk(
      lines.some((line) => /went silent|does not work through/.test(line.msg)),
      'a change found by the check after its notification is not taken for a deaf connection',
    )
    t.equal(await readMetric(metrics.feedListening), 1, 'still listening')
    const waits = await replayWaits(metrics)
    t.ok(
      waits.sum >= (2 * waitMaxMs) / 1000,
      `the waits that gave up are observed (${waits.sum} s)`,
    )
  },
)

t.test('reading from the primary itself, nothing waits and nothing is observed', async (t) => {
  const db = await createReplicatedDatabase(t, replica)
  const { feed, metrics } = startFeed(t, db.primaryUrl, db.primaryUrl, {
    checkIntervalMs: LONG_CHECK_MS,
  })
  await waitFor(async () => (await readMetric(metrics.feedListening)) === 1, 'LISTEN')
  await waitFor(() => appNameOf(feed) === 'CRM', 'the first snapshot')
  await db.primary`update shell.apps set name = 'CRM 1' where app_key = 'crm'`
  const committedAt = performance.now()
  await waitFor(() => appNameOf(feed) === 'CRM 1', 'the commit')
  t.ok(performance.now() - committedAt < APPLY_DELAY_MS, 'served before the standby could have it')
  t.same(await replayWaits(metrics), { count: 0, sum: 0 }, 'no wait observed')
})

t.test(
  'a standby without FEED_DATABASE_URL: a primary sought for a while, then read; said twice, not listening, fresh by the check',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    const standbyModeAfterMs = 2_000
    const startedAt = performance.now()
    const { feed, metrics, lines } = startFeed(t, db.standbyUrl, db.standbyUrl, {
      standbyModeAfterMs,
    })
    const refusals = () => lines.filter((line) => /LISTEN/.test(line.msg) && line.level >= 20)
    await waitFor(() => refusals().length > 0, 'LISTEN refused')
    const [sought] = refusals()
    t.equal(sought?.level, 40, 'a warn line')
    t.match(sought?.msg, /in recovery/, 'that says the server is in recovery')
    t.match(sought?.msg, `127.0.0.1:${replica.standby.port}`, 'and names it')
    t.equal(feed.current(), undefined, 'its data are not read meanwhile: a primary is sought')
    await waitFor(() => appNameOf(feed) === 'CRM', 'the first snapshot, without LISTEN')
    t.ok(
      performance.now() - startedAt >= standbyModeAfterMs,
      'read from the standby once it was the only server found for the while',
    )
    const [, warning] = refusals()
    t.equal(warning?.level, 40, 'then a warn line')
    t.match(warning?.msg, /FEED_DATABASE_URL/, 'that names FEED_DATABASE_URL')
    t.equal(await readMetric(metrics.feedListening), 0, 'shell_feed_listening is 0')
    for (let round = 1; round <= 2; round += 1) {
      await db.primary`update shell.apps set name = ${`CRM ${round}`} where app_key = 'crm'`
      const committedAt = performance.now()
      await waitFor(() => appNameOf(feed) === `CRM ${round}`, `round ${round}, by the check`)
      const servedMs = performance.now() - committedAt
      t.ok(
        servedMs <= APPLY_DELAY_MS + 1_000 + MARGIN_MS,
        `round ${round}: served ${Math.round(servedMs)} ms after the commit, within the lag and a check period`,
      )
    }
    t.ok(snapshotAgeSeconds(feed) < 2, 'the snapshot is fresh')
    t.equal(refusals().length, 2, 'LISTEN not tried again within the minute')
    t.equal(await readMetric(metrics.feedListening), 0, 'and still 0')
    t.same(await replayWaits(metrics), { count: 0, sum: 0 }, 'nothing announced, nothing waited')
  },
)
