/**
 * The vendored driver with several hosts and target_session_attrs, against a
 * real primary and its hot standby (src/vendor/postgres/README.md): each host
 * is tried once, in order; a host that refuses, does not answer in time, or
 * does not match target_session_attrs is left for the next; past the last,
 * the query fails with the last host's error instead of going round forever.
 */
import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { startStreamingReplica, whoAnswers } from '../helpers/streaming-replica.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'

const replica = await startStreamingReplica()
t.teardown(() => replica.remove())

/** `postgres://…@h1:p1,h2:p2/postgres` for these ports, all on 127.0.0.1. */
function hostsUrl(...ports: number[]): string {
  const hosts = ports.map((port) => `127.0.0.1:${port}`).join(',')
  return replica.primary.adminUrl.replace(/@[^/]+\//, `@${hosts}/`)
}

t.test('the set-up: one primary, one standby', async (t) => {
  t.same(await whoAnswers(replica.primary.adminUrl), {
    port: replica.primary.port,
    inRecovery: false,
  })
  t.same(await whoAnswers(replica.standby.adminUrl), {
    port: replica.standby.port,
    inRecovery: true,
  })
})

t.test('a first host that refuses: the second answers', async (t) => {
  const closed = await findFreePort()
  t.equal((await whoAnswers(hostsUrl(closed, replica.primary.port))).port, replica.primary.port)
})

t.test('a first host that never answers: the second answers after connect_timeout', async (t) => {
  const silent = await startTcpProxy('127.0.0.1', replica.primary.port)
  t.teardown(() => silent.close())
  silent.hold()
  const startedAt = performance.now()
  const found = await whoAnswers(hostsUrl(silent.port, replica.standby.port), {
    connect_timeout: 1,
  })
  t.equal(found.port, replica.standby.port, 'the next host, where it failed with CONNECT_TIMEOUT')
  t.comment(`answered after ${Math.round(performance.now() - startedAt)} ms`)
})

for (const attrs of ['primary', 'read-write'] as const) {
  t.test(`target_session_attrs=${attrs}: a standby first is left for the primary`, async (t) => {
    const found = await whoAnswers(hostsUrl(replica.standby.port, replica.primary.port), {
      target_session_attrs: attrs,
    })
    t.same(found, { port: replica.primary.port, inRecovery: false })
  })

  t.test(
    `target_session_attrs=${attrs}: only a standby, the query fails and says why`,
    async (t) => {
      const error = await whoAnswers(hostsUrl(replica.standby.port), {
        target_session_attrs: attrs,
      }).catch((caught: unknown) => caught)
      t.match(error, { code: 'TARGET_SESSION_ATTRS', in_hot_standby: 'on' })
      t.match((error as Error).message, /in recovery/)
    },
  )
}

t.test('every host down: the query fails, it does not go round for ever', async (t) => {
  const [first, second] = [await findFreePort(), await findFreePort()]
  const error = await whoAnswers(hostsUrl(first, second)).catch((caught: unknown) => caught)
  t.match(error, { code: 'ECONNREFUSED', port: second }, "the last host's error")
})

t.test('target_session_attrs=any in the URL is the default, not an error', async (t) => {
  const found = await whoAnswers(`${replica.standby.adminUrl}?target_session_attrs=any`)
  t.equal(found.port, replica.standby.port)
})
