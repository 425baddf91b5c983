import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { findChromium } from '../helpers/browser.js'
import {
  type ClientPage,
  type SeenRequest,
  type SeenState,
  startClientPages,
} from '../helpers/client-page.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import { sleep, waitFor } from '../helpers/wait.js'

/**
 * The client when things fail (CONTRACT.md 13), in Chromium, loaded
 * cross-origin: one renewal after a 401 and a stop after the second, an
 * unknown app, Retry-After on 503 (a real service with no snapshot, to the
 * GET and to the stream) and on 429, and a capped, jittered backoff after an
 * unreachable service or another 5xx, and a GET that never answers given up
 * after `timeoutMs` (a proxy holds it). The 429, 5xx and refused connections
 * are forced with Playwright's routing, as the service sends none of them
 * on purpose; everything else is the real service. No unhandled rejection,
 * ever.
 */

const chromium = await findChromium()
const skip = 'skip' in chromium ? chromium.skip : false
/** The first retry after a failure waits this at least. */
const FIRST_RETRY_MS = 1_000
/** Longer than the first retry of a failure (1 s): what would come has come by then. */
const QUIET_MS = 1_500
/** Timers fire a little late, never early; request times are taken in this process. */
const EARLY_SLACK_MS = 50
const LATE_SLACK_MS = 1_500
/** What the service answers while no snapshot is loaded (routes/tagged-response.ts). */
const NOT_READY_RETRY_AFTER_MS = 2_000

const isShellGet = (request: SeenRequest) => request.url.endsWith('/api/v1/shell/crm')
const isStream = (request: SeenRequest) => request.url.endsWith('/events')
const gapsBetween = (requests: SeenRequest[]) =>
  requests.slice(1).map((request, index) => request.at - (requests[index]?.at ?? 0))

t.test('the client when things fail', { skip }, async (t) => {
  if ('skip' in chromium) return
  const logs = createLogCapture()
  const pages = await startClientPages(t, chromium.path, { logs })
  const { service } = pages
  const sales = { sub: 'user-1', realm_access: { roles: ['crm-sales'] } }
  /** Past exp by more than the service's 30 s of clock tolerance: a real 401. */
  const expiredToken = () => service.jwks.sign(sales, { expiresInS: -120 })
  const goodToken = () => service.jwks.sign(sales)
  const opened: ClientPage[] = []
  const open = async () => {
    const page = await pages.open()
    opened.push(page)
    return page
  }
  t.teardown(async () => {
    for (const page of opened) await page.page.close().catch(() => {})
  })

  await t.test('a 401: getToken({ renew: true }) once, and the request again', async (t) => {
    pages.setTokens('renewed', ({ renew }) => (renew ? goodToken() : expiredToken()))
    const page = await open()
    await page.start('renewed', { live: false })
    const state = await page.waitForState('renewed', (state) => state.sub !== null, 'the shell')
    t.match(state, { source: 'network', error: null, stale: false })
    t.same(pages.tokenCalls.get('renewed'), [{ renew: false }, { renew: true }])
    t.same(
      page.requests.map((request) => request.status),
      [401, 200],
    )
    t.not(page.requests[0]?.headers.authorization, page.requests[1]?.headers.authorization)
  })

  await t.test('a second 401: the error, and nothing more until refresh()', async (t) => {
    let valid = false
    pages.setTokens('refused', () => (valid ? goodToken() : expiredToken()))
    const page = await open()
    // Nothing kept: the token names user-1, whose shell the first subtest kept.
    await page.start('refused', { storage: 'none' })
    const state = await page.waitForState('refused', (state) => state.error !== null, 'the error')
    t.match(state, { error: { status: 401 }, sub: null, live: false, stale: false })
    await waitFor(async () => (await page.read('refused')).ready !== 'pending', 'ready to settle')
    t.equal((await page.read('refused')).ready, 'rejected 401', 'ready rejects with status 401')
    await waitFor(() => page.requests.every((request) => request.status !== undefined), 'answers')
    const seen = page.requests.length
    t.same(
      page.requests.filter(isShellGet).map((request) => request.status),
      [401, 401],
      'the GET refused twice',
    )
    t.ok(page.requests.filter(isStream).length <= 2, 'the stream ended with it')
    await sleep(QUIET_MS)
    t.equal(page.requests.length, seen, 'stopped')

    valid = true
    await page.refresh('refused')
    const after = await page.waitForState('refused', (state) => state.sub !== null, 'the shell')
    t.match(after, { error: null, source: 'network' })
    await page.waitForState('refused', (state) => state.live, 'the stream again')
    t.same(await page.problems(), [])
  })

  await t.test('an unknown app: 404, and ready rejects', async (t) => {
    const page = await open()
    await page.start('unknown', { appKey: 'no-such-app', live: false })
    await page.start('unknown-unawaited', { appKey: 'no-such-app', ignoreReady: true })
    for (const name of ['unknown', 'unknown-unawaited']) {
      const state = await page.waitForState(name, (state) => state.error !== null, '404')
      t.match(state, { error: { status: 404 }, sub: null })
    }
    await waitFor(async () => (await page.read('unknown')).ready !== 'pending', 'ready')
    t.equal((await page.read('unknown')).ready, 'rejected 404')
    t.same(await page.problems(), [], 'an unawaited ready is no unhandled rejection')
  })

  await t.test('503 with Retry-After, to the GET and to the stream', async (t) => {
    // A real instance that never loads a snapshot: every API request is a 503, Retry-After: 2.
    const closedPort = await findFreePort()
    const notReady = await startTestService(t, {
      logs,
      jwks: service.jwks,
      waitForSnapshot: false,
      env: {
        DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing`,
        MIGRATE: 'off',
        CORS_ORIGINS: pages.origin,
      },
    })
    const page = await open()
    await page.start('waiting', { baseUrl: notReady.url })
    const answered = (requests: SeenRequest[]) =>
      requests.filter((request) => request.status !== undefined).length >= 3
    await waitFor(
      () => answered(page.requests.filter(isShellGet)) && answered(page.requests.filter(isStream)),
      'three GETs and three streams answered',
      20_000,
    )
    const state = (await page.read('waiting')).states.at(-1)
    t.match(state, { error: { status: 503 }, live: false, stale: false, sub: null })
    for (const [what, requests] of [
      ['GET', page.requests.filter(isShellGet)],
      ['stream', page.requests.filter(isStream)],
    ] as const) {
      t.ok(
        requests.slice(0, 3).every((request) => request.status === 503),
        `${what}: 503s`,
      )
      for (const gapMs of gapsBetween(requests.slice(0, 3))) {
        t.ok(
          gapMs >= NOT_READY_RETRY_AFTER_MS - EARLY_SLACK_MS &&
            gapMs <= NOT_READY_RETRY_AFTER_MS + LATE_SLACK_MS,
          `${what}: again after ${gapMs} ms (Retry-After: 2)`,
        )
      }
    }
    await page.close('waiting')
    t.same(await page.problems(), [])
  })

  await t.test('429 with Retry-After', async (t) => {
    const page = await open()
    let refused = 0
    await page.page.route('**/api/v1/shell/crm', (route) => {
      if (refused++ > 0) return route.continue()
      return route.fulfill({
        status: 429,
        headers: {
          'access-control-allow-origin': pages.origin,
          'access-control-expose-headers': 'Retry-After',
          'content-type': 'application/problem+json',
          'retry-after': '3',
        },
        body: JSON.stringify({ status: 429, detail: 'slow down' }),
      })
    })
    await page.start('throttled', { live: false, storage: 'none' })
    const throttled = await page.waitForState('throttled', (state) => state.error !== null, '429')
    t.same(throttled.error, { status: 429, detail: 'slow down' })
    await page.waitForState('throttled', (state) => state.sub !== null, 'the shell after it')
    const gets = page.requests.filter(isShellGet)
    const [gapMs] = gapsBetween(gets)
    t.ok(
      gapMs !== undefined && gapMs >= 3_000 - EARLY_SLACK_MS && gapMs <= 3_000 + LATE_SLACK_MS,
      `again after ${gapMs} ms (Retry-After: 3)`,
    )
    t.match((await page.read('throttled')).states.at(-1), { error: null, stale: false })
  })

  await t.test(
    'a GET that never answers: stale, status 0, after timeoutMs; the next not queued behind it',
    async (t) => {
      const proxy = await startTcpProxy('127.0.0.1', Number(new URL(service.url).port))
      t.teardown(() => proxy.close())
      const page = await open()
      await page.start('hung', {
        sub: 'user-1',
        baseUrl: `http://127.0.0.1:${proxy.port}`,
        live: false,
        timeoutMs: 2_000,
      })
      await page.waitForState('hung', (state) => state.source === 'network', 'the shell')
      const seenBefore = (await page.read('hung')).states.length
      // The next GET reaches no one: the proxy keeps it, its connection open and silent.
      proxy.holdRequests((requestLine) => requestLine.startsWith('GET /api/v1/shell/crm '))
      await page.refresh('hung')
      // Held at the proxy, not only sent: the browser reports a request before its bytes arrive,
      // and one that reached the proxy after release() would be answered.
      await waitFor(
        () => proxy.requestsHeld() === 1 && page.requests.filter(isShellGet).length === 2,
        'the GET sent and held',
      )
      proxy.release()
      // Asked again meanwhile: this waits for the GET in flight, never for long.
      await page.refresh('hung')
      // Any state since: the error lasts only until the revalidation asked for meanwhile answers,
      // milliseconds later, so the state shown when the test looks may already be the next one.
      let gaveUp: SeenState | undefined
      await waitFor(async () => {
        const { states } = await page.read('hung')
        gaveUp = states.slice(seenBefore).find((state) => state.error !== null)
        return gaveUp !== undefined
      }, 'the held GET given up')
      t.match(gaveUp, {
        stale: true,
        sub: 'user-1',
        error: { status: 0, detail: /no answer in 2000 ms/ },
      })
      const confirmed = await page.waitForState(
        'hung',
        (state) => state.error === null,
        'the revalidation asked for meanwhile',
      )
      t.match(confirmed, { stale: false, source: 'network' })
      const [, held, next] = page.requests.filter(isShellGet)
      t.equal(held?.status, -1, `the held GET was aborted (${held?.failure})`)
      const waitedMs = (next?.at ?? Number.NaN) - (held?.doneAt ?? Number.NaN)
      t.ok(waitedMs < FIRST_RETRY_MS, `the next went out ${waitedMs} ms after, not after a backoff`)
      t.equal(page.requests.filter(isShellGet).length, 3, 'and no other')
      await page.close('hung')
      t.same(await page.problems(), [])
    },
  )

  await t.test('unreachable, then a 502: a capped backoff with jitter', async (t) => {
    const page = await open()
    let failures = 0
    await page.page.route('**/api/v1/shell/crm', (route) => {
      failures += 1
      if (failures <= 2) return route.abort('connectionrefused')
      if (failures === 3) {
        return route.fulfill({
          status: 502,
          headers: { 'access-control-allow-origin': pages.origin },
          body: 'bad gateway',
        })
      }
      return route.continue()
    })
    // The stream fails too: that shows in `live`, never in `error`.
    await page.page.route('**/api/v1/shell/crm/events', (route) => route.abort('connectionrefused'))
    // user-1's shell is kept from the first subtest: it stays shown, stale, while nothing answers.
    await page.start('failing', { sub: 'user-1' })
    await page.waitForState('failing', (state) => state.error?.status === 0, 'unreachable')
    t.match((await page.read('failing')).states.at(-1), {
      source: 'storage',
      stale: true,
      live: false,
    })
    await page.waitForState('failing', (state) => state.error?.status === 502, 'the 502')
    t.match((await page.read('failing')).states.at(-1), { stale: true, sub: 'user-1' })
    const confirmed = await page.waitForState(
      'failing',
      (state) => state.source === 'network',
      'confirmed',
      20_000,
    )
    t.match(confirmed, { error: null, stale: false, live: false })
    const gaps = gapsBetween(page.requests.filter(isShellGet))
    t.comment(`retried after ${gaps.join(', ')} ms`)
    // 1 s, then 1 to 2 s, then 2 to 4 s: doubling, never under a second, with jitter.
    const bounds = [
      [1_000, 1_000],
      [1_000, 2_000],
      [2_000, 4_000],
    ]
    for (const [index, [least, most]] of bounds.entries()) {
      const gapMs = gaps[index] ?? Number.NaN
      t.ok(
        gapMs >= (least ?? 0) - EARLY_SLACK_MS && gapMs <= (most ?? 0) + LATE_SLACK_MS,
        `retry ${index + 1} after ${gapMs} ms, within ${least} to ${most}`,
      )
    }
    const streamsSoFar = page.requests.filter(isStream).length
    await waitFor(
      () => page.requests.filter(isStream).length > streamsSoFar,
      'the stream tried again',
      40_000,
    )
    t.match(
      (await page.read('failing')).states.at(-1),
      { error: null, live: false },
      'a failing stream shows in live, not in error',
    )
    await page.close('failing')
    t.same(await page.problems(), [], 'no unhandled rejection')
  })

  t.same(logs.leaks(), [], 'no token in the service’s logs')
})
