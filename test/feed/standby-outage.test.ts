/**
 * The service reading a real hot standby, listening on its primary, while the
 * primary is stopped for three seconds: the standby goes on serving, so the
 * instance stays ready on its snapshot, and once the primary is back a
 * commit is served within the standby's lag plus the two seconds a
 * database outage allows (docs/operations.md, "When things fail").
 */
import t from 'tap'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { readMetric, snapshotAgeSeconds } from '../helpers/metrics.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { createReplicatedDatabase, startStreamingReplica } from '../helpers/streaming-replica.js'
import { sleep, waitFor } from '../helpers/wait.js'

/** The standby's known lag: recovery_min_apply_delay. */
const APPLY_DELAY_MS = 1_000
/** The outage the primary goes through. */
const OUTAGE_MS = 3_000
/** What a commit made once the primary is back may take past the lag (as for one database). */
const SERVED_WITHIN_MS = 2_000

const replica = await startStreamingReplica({ applyDelayMs: APPLY_DELAY_MS })
t.teardown(() => replica.remove())

t.test(
  'the primary stopped for a few seconds: the standby serves, then changes flow again',
  async (t) => {
    const db = await createReplicatedDatabase(t, replica)
    const logs = createLogCapture()
    const { url, token, service } = await startTestService(t, {
      logs,
      db: {
        url: db.standbyUrl,
        name: db.name,
        sql: db.primary,
        adminUrl: replica.primary.adminUrl,
      },
      env: { DATABASE_URL: db.standbyUrl, FEED_DATABASE_URL: db.primaryUrl },
    })
    const caller = bearer(await token())
    const appName = async () =>
      (await httpRequest(url, '/api/v1/shell/crm', caller)).json<{ app: { name: string } }>().app
        .name
    const listening = () => readMetric(service.metrics.feedListening)
    await waitFor(async () => (await listening()) === 1, 'LISTEN on the primary')
    await db.primary`update shell.apps set name = 'Before' where app_key = 'crm'`
    await waitFor(async () => (await appName()) === 'Before', 'a commit before the outage')

    await replica.primary.stop()
    await waitFor(async () => (await listening()) === 0, 'the primary gone, noticed')
    await sleep(OUTAGE_MS)
    t.equal((await httpRequest(url, '/readyz')).status, 200, 'still ready meanwhile')
    t.equal(await appName(), 'Before', 'the last snapshot is served')
    t.ok(
      snapshotAgeSeconds(service.feed) < 2,
      'and confirmed by the standby, which answers the check',
    )

    await replica.primary.start()
    await db.primary`update shell.apps set name = 'After' where app_key = 'crm'`
    const committedAt = performance.now()
    await waitFor(async () => (await appName()) === 'After', 'the commit after the outage', 30_000)
    const servedMs = performance.now() - committedAt
    t.ok(
      servedMs <= APPLY_DELAY_MS + SERVED_WITHIN_MS,
      `served ${Math.round(servedMs)} ms after the commit, within ${APPLY_DELAY_MS} + ${SERVED_WITHIN_MS} ms`,
    )
    await waitFor(async () => (await listening()) === 1, 'listening again')
  },
)
