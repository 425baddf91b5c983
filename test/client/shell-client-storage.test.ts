import t from 'tap'
import { findChromium } from '../helpers/browser.js'
import { type ClientPage, type SeenState, startClientPages } from '../helpers/client-page.js'
import { SEED_SIDEBAR_BY_ROLE } from '../helpers/seed-sidebar.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/**
 * The last known good shell (CONTRACT.md 13), in Chromium, the client loaded
 * cross-origin from the service as a front end on another origin loads it:
 * kept across page loads, shown before the network answers and then
 * revalidated to a 304 (by the browser's HTTP cache from another origin, by
 * the script on the service's own), shown while the service is down, never
 * shown to another user, dropped after 7 days, at most 20 of them, all
 * removed by clearStoredShells and nothing else, and a storage that throws
 * counts as none.
 */

const chromium = await findChromium()
const skip = 'skip' in chromium ? chromium.skip : false
const SALES_LABELS = ['Dashboard', 'Contacts', 'Accounts', 'Leads', 'Opportunities', 'Activities']
const ADMIN_LABELS = [
  'Dashboard',
  'Contacts',
  'Accounts',
  'Activities',
  'Reports',
  'Administration',
]
const DAY_MS = 24 * 60 * 60 * 1000

t.equal(SEED_SIDEBAR_BY_ROLE[1]?.[1].length, SALES_LABELS.length, 'the seed sidebar of crm-sales')

const network = (state: SeenState) => state.source === 'network'

t.test('the last shell, kept in localStorage', { skip }, async (t) => {
  if ('skip' in chromium) return
  const logs = createLogCapture()
  const pages = await startClientPages(t, chromium.path, { logs })
  const { service } = pages
  pages.setTokens('admin', () => service.token({ sub: 'user-2', roles: ['crm-admin'] }))
  pages.setTokens('admin-named-as-user-1', () =>
    service.token({ sub: 'user-2', roles: ['crm-admin'] }),
  )
  const opened: ClientPage[] = []
  const open = async () => {
    const page = await pages.open()
    opened.push(page)
    return page
  }

  await t.test('a second page load shows the stored shell first, then gets a 304', async (t) => {
    const first = await open()
    await first.start('sales', { sub: 'user-1', live: false })
    const fetched = await first.waitForState('sales', network, 'the shell from the network')
    t.same(fetched.sidebar, SALES_LABELS)
    t.equal(first.requests[0]?.headers['if-none-match'], undefined, 'nothing to revalidate yet')
    t.equal(first.requests[0]?.status, 200)
    const kept = await first.storage()
    const keys = Object.keys(kept)
    t.equal(keys.length, 1, 'one shell kept')
    t.match(keys[0], /^shell-data:v1:/)
    t.notMatch(keys[0], /user-1/, 'the key holds a hash of the sub, not the sub')
    t.ok(keys[0]?.includes(service.url), 'the key names the service')
    await first.page.close()

    // The second load: getToken does not answer until the test says so.
    let releaseToken = () => {}
    const tokenAsked = new Promise<void>((resolve) => {
      pages.setTokens('sales-again', async () => {
        resolve()
        await new Promise<void>((release) => {
          releaseToken = release
        })
        return service.token({ sub: 'user-1', roles: ['crm-sales'] })
      })
    })
    const second = await open()
    await second.start('sales-again', { sub: 'user-1', live: false })
    await tokenAsked
    const before = await second.read('sales-again')
    t.equal(before.states.length, 1)
    t.match(before.states[0], { source: 'storage', sub: 'user-1', stale: false, error: null })
    t.same(before.states[0]?.sidebar, SALES_LABELS, 'the first state is the stored shell')
    t.equal(second.requests.length, 0, 'shown before any request, while getToken is pending')
    t.equal(before.ready, 'resolved', 'ready: the stored shell is a shell')
    const notModifiedBefore = await pages.shellAnswers(304)
    releaseToken()

    const revalidated = await second.waitForState('sales-again', network, 'the revalidation')
    t.equal(second.requests.length, 1, 'one request')
    await waitFor(() => second.requests[0]?.sentHeaders !== undefined, 'its headers')
    t.equal(
      second.requests[0]?.sentHeaders?.['if-none-match'],
      fetched.etag ?? 'the first etag',
      'the first request carries the stored tag: from another origin the browser’s cache sends it',
    )
    t.equal(second.requests[0]?.headers['if-none-match'], undefined, 'not the script')
    t.equal(await pages.shellAnswers(304), notModifiedBefore + 1, 'and gets a 304')
    t.equal(revalidated.etag, fetched.etag)
    t.same(revalidated.sidebar, SALES_LABELS, 'the stored shell stays')
    const { states } = await second.read('sales-again')
    t.same(
      states.map((state) => state.source),
      ['storage', 'network'],
      'never without a shell in between',
    )
    t.ok(
      states.every((state) => state.frozen),
      'each state is frozen',
    )
  })

  await t.test('live: the stream resumes from the stored tag, and no second GET', async (t) => {
    const page = await open()
    await page.start('sales-live', { sub: 'user-1' })
    const [kept] = Object.values(await page.storage())
    const { etag } = JSON.parse(kept ?? '{}') as { etag?: string }
    await page.waitForState('sales-live', (state) => state.live && network(state), 'live')
    const stream = page.requests.find((request) => request.url.endsWith('/events'))
    t.equal(stream?.headers['last-event-id'], etag?.replaceAll('"', ''), 'Last-Event-ID: its tag')
    t.equal(
      page.requests.filter((request) => request.url.endsWith('/api/v1/shell/crm')).length,
      1,
      'the one revalidation',
    )
    await page.close('sales-live')
  })

  await t.test('without the sub option: from storage once the token names the user', async (t) => {
    const page = await open()
    const notModifiedBefore = await pages.shellAnswers(304)
    await page.start('unnamed', { live: false })
    await page.waitForState('unnamed', network, 'the revalidation')
    const { states } = await page.read('unnamed')
    t.same(
      states.map((state) => state.source),
      [null, 'storage', 'network'],
      'nothing, then the stored shell, then the network’s answer',
    )
    t.equal(await pages.shellAnswers(304), notModifiedBefore + 1, 'the stored tag still matches')
  })

  await t.test('another sub, same storage: nothing of the first user’s', async (t) => {
    const page = await open()
    await page.start('admin', { sub: 'user-2', live: false })
    const admin = await page.waitForState('admin', network, 'user-2’s shell')
    t.same(admin.sidebar, ADMIN_LABELS)
    const { states } = await page.read('admin')
    t.equal(states[0]?.sub, null, 'user-2 has nothing kept: the first state is empty')
    t.notOk(
      states.some((state) => state.sub === 'user-1'),
      'user-1’s shell never shown',
    )
    t.equal(page.requests[0]?.headers['if-none-match'], undefined, 'nor its tag sent')
    t.equal(Object.keys(await page.storage()).length, 2, 'each user’s shell kept apart')
  })

  await t.test('the sub option wrong: the token’s sub wins at once', async (t) => {
    const page = await open()
    const notModifiedBefore = await pages.shellAnswers(304)
    await page.start('admin-named-as-user-1', { sub: 'user-1', live: false })
    await page.waitForState('admin-named-as-user-1', network, 'user-2’s shell')
    const { states } = await page.read('admin-named-as-user-1')
    t.same(
      states.map((state) => [state.source, state.sub]),
      [
        ['storage', 'user-1'],
        ['storage', 'user-2'],
        ['network', 'user-2'],
      ],
      'user-1’s stored shell is replaced by user-2’s as soon as the token is read',
    )
    t.equal(await pages.shellAnswers(304), notModifiedBefore + 1, 'user-2’s tag revalidated')
  })

  await t.test('a kept shell older than 7 days is dropped', async (t) => {
    const page = await open()
    await page.page.evaluate((ageMs) => {
      const storage = (
        globalThis as unknown as {
          localStorage: {
            getItem(key: string): string
            setItem(key: string, value: string): void
            key(index: number): string
            length: number
          }
        }
      ).localStorage
      for (let index = 0; index < storage.length; index += 1) {
        const key = storage.key(index)
        const kept = JSON.parse(storage.getItem(key)) as { savedAt: number }
        kept.savedAt = Date.now() - ageMs
        storage.setItem(key, JSON.stringify(kept))
      }
    }, 8 * DAY_MS)
    await page.start('sales-later', { sub: 'user-1', live: false })
    const { states } = await page.read('sales-later')
    t.equal(states[0]?.source, null, 'not shown')
    await page.waitForState('sales-later', network, 'the shell from the network')
    t.equal(page.requests[0]?.headers['if-none-match'], undefined, 'its tag not sent')
    t.equal(page.requests[0]?.status, 200)
  })

  await t.test('a storage that throws counts as none', async (t) => {
    const page = await open()
    await page.start('throwing', { sub: 'user-1', live: false, storage: 'throwing' })
    const state = await page.waitForState('throwing', network, 'the shell')
    t.same(state.sidebar, SALES_LABELS)
    t.equal((await page.read('throwing')).states[0]?.source, null, 'nothing read from it')
    t.same(await page.problems(), [], 'no error on the page')
  })

  await t.test('on the service’s own origin the script sends the stored tag', async (t) => {
    const openSameOrigin = async () => {
      const page = await pages.open('client.html', { sameOrigin: true })
      opened.push(page)
      return page
    }
    const first = await openSameOrigin()
    await first.start('same-origin', { sub: 'user-1', live: false })
    const fetched = await first.waitForState('same-origin', network, 'the shell')
    t.equal(first.requests[0]?.status, 200)
    await first.page.close()

    const second = await openSameOrigin()
    await second.start('same-origin', { sub: 'user-1', live: false })
    const state = await second.waitForState('same-origin', network, 'the revalidation')
    t.equal(second.requests.length, 1, 'one request')
    t.equal(
      second.requests[0]?.headers['if-none-match'],
      fetched.etag ?? 'the stored tag',
      'the script sends the stored tag: no preflight to spare',
    )
    t.equal(second.requests[0]?.status, 304, 'and its 304 reaches the client')
    t.match(state, { source: 'network', stale: false, sub: 'user-1' })
  })

  await t.test('clearStoredShells: every kept shell, whoever’s, and nothing else', async (t) => {
    const page = await open()
    // Two users' shells kept, as on a shared machine.
    await page.start('user-1-again', { sub: 'user-1', live: false })
    await page.start('admin', { sub: 'user-2', live: false })
    for (const name of ['user-1-again', 'admin']) await page.waitForState(name, network, name)
    await page.page.evaluate(() => {
      const { localStorage } = globalThis as unknown as {
        localStorage: { setItem(key: string, value: string): void }
      }
      localStorage.setItem('draft', 'the page’s own')
      localStorage.setItem('shell-database-settings', 'the page’s too')
      localStorage.setItem('shell-data:v0:an-older-client', '{}')
    })
    const before = Object.keys(await page.storage())
    const users = new Set(
      Object.entries(await page.storage())
        .filter(([key]) => key.startsWith('shell-data:v1:'))
        .map(
          ([, kept]) => (JSON.parse(kept) as { shell: { user: { sub: string } } }).shell.user.sub,
        ),
    )
    t.ok(users.has('user-1') && users.has('user-2'), `kept for ${[...users].join(', ')}`)
    t.ok(before.includes('shell-data:v0:an-older-client'), 'and an older client’s entry')
    await page.clearStoredShells()
    t.same(
      await page.storage(),
      { draft: 'the page’s own', 'shell-database-settings': 'the page’s too' },
      'the page’s own entries stay',
    )
    t.same(await page.problems(), [])
  })

  await t.test(
    '25 users on one storage leave the 20 latest; an expired entry goes first',
    async (t) => {
      const page = await open()
      // Written eight days ago by a client of another service: dropped at the next write.
      const expired = 'shell-data:v1:http://elsewhere.example|crm|en|0'
      await page.page.evaluate(
        ([key, savedAt]) => {
          const { localStorage } = globalThis as unknown as {
            localStorage: { setItem(key: string, value: string): void }
          }
          localStorage.setItem(key, JSON.stringify({ shell: {}, etag: '"x"', savedAt }))
        },
        [expired, Date.now() - 8 * DAY_MS] as const,
      )
      const users = Array.from({ length: 25 }, (_, index) => `visitor-${index + 1}`)
      for (const sub of users) {
        pages.setTokens(sub, () => service.token({ sub, roles: ['crm-sales'] }))
        await page.start(sub, { live: false })
        await page.waitForState(sub, network, `${sub}’s shell`)
        if (sub === 'visitor-1') {
          t.notOk(
            expired in (await page.storage()),
            'the expired entry is dropped by the first write',
          )
        }
      }
      const kept = Object.entries(await page.storage()).filter(([key]) =>
        key.startsWith('shell-data:v1:'),
      )
      t.equal(kept.length, 20, 'twenty entries')
      t.same(
        kept
          .map(
            ([, value]) =>
              (JSON.parse(value) as { shell: { user: { sub: string } } }).shell.user.sub,
          )
          .sort(),
        users.slice(5).sort(),
        'the twenty latest users’, the oldest dropped',
      )
    },
  )

  await t.test(
    'the service stopped: the stored shell, stale, no unhandled rejection',
    async (t) => {
      // A second instance to stop, on the same database and provider; the module still comes
      // from the first, as it would from the browser's cache.
      const doomed = await startTestService(t, {
        logs,
        db: service.db,
        jwks: service.jwks,
        env: { CORS_ORIGINS: pages.origin },
      })
      const first = await open()
      await first.start('sales', { sub: 'user-1', baseUrl: doomed.url, live: false })
      const fetched = await first.waitForState('sales', network, 'the shell from the instance')
      await first.page.close()
      await doomed.close()

      const second = await open()
      for (const ignoreReady of [false, true]) {
        const name = ignoreReady ? 'ready-ignored' : 'ready-awaited'
        await second.start(name, { sub: 'user-1', baseUrl: doomed.url, ignoreReady })
        const shown = await second.waitForState(
          name,
          (state) => state.error !== null,
          'the failure to reach the service',
        )
        t.match(shown, { source: 'storage', stale: true, live: false, error: { status: 0 } })
        t.same(shown.sidebar, SALES_LABELS, 'the stored shell is still shown')
        t.equal(shown.etag, fetched.etag)
      }
      t.equal((await second.read('ready-awaited')).ready, 'resolved', 'ready: the stored shell')
      const attempts = () =>
        second.requests.filter((request) => request.url.endsWith('/api/v1/shell/crm')).length
      const firstAttempts = attempts()
      await second.waitForState(
        'ready-awaited',
        () => attempts() > firstAttempts,
        'a retry after the backoff',
      )
      t.same(await second.problems(), [], 'no unhandled rejection, no script error')
    },
  )

  t.teardown(async () => {
    for (const page of opened) await page.page.close().catch(() => {})
  })
  t.same(logs.leaks(), [], 'no token in the service’s logs')
})
