import t from 'tap'
import { createFetchWithToken } from '../../src/client/fetch-with-token.js'
import { createShellStream, type ShellStream } from '../../src/client/shell-stream.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { sleep, waitFor } from '../helpers/wait.js'

/**
 * The event stream's rule for tokens (CONTRACT.md 13, "Tokens"), on the client's own modules
 * against a running service with a real JWKS: a `401` renews the token once; a renewed token
 * refused too stops the stream, with no reopening (no loop of renewals), until `open()`
 * (`refresh()`) or a token other than the refused one.
 */

const logs = createLogCapture()
const { url, jwks } = await startTestService(t, { logs })
const claims = { sub: 'user-1', realm_access: { roles: ['crm-sales'] } }
/** Past exp by more than the service's 30 s of clock tolerance: a real 401, every time. */
const expired = await jwks.sign(claims, { expiresInS: -120 })
/** Past the first reopening of a failed stream (a backoff of at most 1 s): what would come has come. */
const QUIET_MS = 1_500

/** A stream on the seed app whose tokens `tokenFor` gives; what it asked for and whether it is live. */
function openStream(tokenFor: (renew: boolean) => Promise<string> | string) {
  const asked: boolean[] = []
  let live = false
  const fetchWithToken = createFetchWithToken(
    ({ renew }) => {
      asked.push(renew)
      return tokenFor(renew)
    },
    '',
    () => {},
    (token) => stream.hearToken(token),
  )
  const stream: ShellStream = createShellStream({
    url: `${url}/api/v1/shell/crm/events`,
    fetchWithToken,
    shownTag: () => '',
    onLive: (value) => {
      live = value
    },
    onShell: () => {},
    onGone: () => {},
    onDead: () => {},
  })
  stream.open()
  t.teardown(() => stream.close())
  return { stream, asked, live: () => live }
}

t.test('a 401, then a renewed token the service takes: the stream opens', async (t) => {
  const { stream, asked, live } = openStream((renew) => (renew ? jwks.sign(claims) : expired))
  await waitFor(live, 'the stream open')
  t.same(asked, [false, true])
  stream.close()
})

t.test('refused twice: not reopened until another token, or open()', async (t) => {
  let next = expired
  const { stream, asked, live } = openStream(() => next)
  await waitFor(() => asked.length === 2, 'two attempts')
  await sleep(QUIET_MS)
  t.same(asked, [false, true], 'the token renewed once, then nothing: not reopened')
  t.equal(live(), false)

  stream.hearToken(expired)
  await sleep(QUIET_MS)
  t.equal(asked.length, 2, 'the refused token again opens nothing')

  next = await jwks.sign(claims)
  stream.hearToken(next)
  await waitFor(live, 'open with the new token')
  t.same(asked, [false, true, false])

  // Refused again (the service restarts the stream at exp, say), then open(): as refresh() does.
  stream.close()
  next = expired
  stream.open()
  await waitFor(() => asked.length === 5, 'refused again')
  await sleep(QUIET_MS)
  t.equal(asked.length, 5, 'not reopened')
  next = await jwks.sign(claims)
  stream.open()
  await waitFor(live, 'open() opens it')
  stream.close()
})

t.test('no token leaked to the logs', async (t) => {
  t.same(logs.leaks(), [])
})
