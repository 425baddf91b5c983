import { createServer as createHttpServer, type ServerResponse } from 'node:http'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import {
  clearStoredShells,
  createShellClient,
  type ShellClient,
  type ShellState,
  type ShellStorage,
} from 'shell-data-service/client'
import t from 'tap'
import { readMetric } from '../helpers/metrics.js'
import { SEED_SALES_SIDEBAR } from '../helpers/seed-sidebar.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { sleep, waitFor } from '../helpers/wait.js'

/**
 * The client on Node 20's fetch (CONTRACT.md 13, "Anywhere fetch is"), as a
 * server-side render or a backend for the front end uses it: imported by the
 * package's name (the built dist/client module), no document, no
 * localStorage, against a running service with tokens from a real JWKS over
 * HTTP; with storage null and with a Map-backed storage.
 */

const unhandled: unknown[] = []
const recordUnhandled = (reason: unknown) => unhandled.push(reason)
process.on('unhandledRejection', recordUnhandled)
t.teardown(() => {
  process.off('unhandledRejection', recordUnhandled)
})

const logs = createLogCapture()
const { url, service, db, token, jwks } = await startTestService(t, { logs })
const getToken = () => token({ sub: 'user-1', roles: ['crm-sales'] })
const openStreams = () => readMetric(service.metrics.eventStreams)

/** Every state a client shows, from the first (given at once by subscribe). */
function follow(client: ShellClient): ShellState[] {
  const states: ShellState[] = []
  client.subscribe((state) => states.push(state))
  return states
}

function createMapStorage(): ShellStorage & { readonly entries: Map<string, string> } {
  const entries = new Map<string, string>()
  return {
    entries,
    getItem: (key) => entries.get(key) ?? null,
    setItem: (key, value) => {
      entries.set(key, value)
    },
    removeItem: (key) => {
      entries.delete(key)
    },
  }
}

t.test('there is no DOM here', async (t) => {
  t.equal(typeof (globalThis as { document?: unknown }).document, 'undefined')
  t.equal(typeof (globalThis as { localStorage?: unknown }).localStorage, 'undefined')
})

t.test('storage null: the shell, live, a commit, close()', async (t) => {
  const client = createShellClient({ appKey: 'crm', getToken, baseUrl: url, storage: null })
  const states = follow(client)
  t.same(states[0], {
    shell: null,
    etag: null,
    source: null,
    live: false,
    stale: false,
    error: null,
  })
  const ready = await client.ready
  t.same(
    ready.shell?.menus.sidebar.map((item) => item.id),
    SEED_SALES_SIDEBAR,
  )
  t.equal(ready.source, 'network')
  t.match(ready.etag, /^"[^"]+"$/)
  await waitFor(() => client.state.live, 'the stream open')
  t.equal(await openStreams(), 1)

  await db.sql`
    update shell.menu_items set label = 'Clients' where app_key = 'crm' and item_key = 'contacts'`
  await waitFor(
    () => client.state.shell?.menus.sidebar[1]?.label === 'Clients',
    'the commit at the subscriber',
  )
  t.ok(
    states.every((state) => Object.isFrozen(state)),
    'every state frozen',
  )
  t.equal(new Set(states).size, states.length, 'a new object each time')

  client.close()
  t.equal(client.state.live, false)
  await waitFor(async () => (await openStreams()) === 0, 'the stream closed on the service')
})

t.test('a Map-backed storage: kept, shown first, then a 304', async (t) => {
  const storage = createMapStorage()
  const first = createShellClient({
    appKey: 'crm',
    getToken,
    baseUrl: url,
    storage,
    live: false,
  })
  const fetched = await first.ready
  first.close()
  t.equal(storage.entries.size, 1)
  const [key] = storage.entries.keys()
  t.notMatch(key, /user-1/, 'the key holds no sub')

  let tokens = 0
  const second = createShellClient({
    appKey: 'crm',
    getToken: () => {
      tokens += 1
      return getToken()
    },
    baseUrl: url,
    storage,
    sub: 'user-1',
    live: false,
  })
  const states = follow(second)
  t.equal(states[0]?.source, 'storage', 'the first state from storage, at once')
  t.equal(states[0]?.etag, fetched.etag)
  await waitFor(() => second.state.source === 'network', 'the revalidation')
  t.equal(tokens, 1)
  t.equal(second.state.etag, fetched.etag, 'a 304: the same tag')
  t.equal(second.state.shell, states[0]?.shell, 'the same shell')
  second.close()
})

t.test(
  'a storage that lists its keys: clearStoredShells(storage) empties it of shells',
  async (t) => {
    const entries = new Map<string, string>([['the-backend-s-own', 'kept']])
    const storage = {
      get length() {
        return entries.size
      },
      key: (index: number) => [...entries.keys()][index] ?? null,
      getItem: (key: string) => entries.get(key) ?? null,
      setItem: (key: string, value: string) => void entries.set(key, value),
      removeItem: (key: string) => void entries.delete(key),
    }
    const client = createShellClient({
      appKey: 'crm',
      getToken,
      baseUrl: url,
      storage,
      live: false,
    })
    await client.ready
    client.close()
    t.equal(entries.size, 2, 'a shell kept')
    clearStoredShells(storage)
    t.same([...entries.keys()], ['the-backend-s-own'], 'only the shell removed')
    clearStoredShells(null)
    clearStoredShells()
    t.pass('no localStorage here, and null: nothing to do, nothing thrown')
  },
)

t.test('a GET that never answers is given up after timeoutMs', async (t) => {
  // Accepts connections and never says a word.
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => void sockets.add(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const { port } = silent.address() as AddressInfo
  const client = createShellClient({
    appKey: 'crm',
    getToken,
    baseUrl: `http://127.0.0.1:${port}`,
    storage: null,
    live: false,
    timeoutMs: 300,
  })
  await waitFor(() => client.state.error !== null, 'the GET given up')
  t.same(client.state.error, { status: 0, detail: 'Error: no answer in 300 ms' })
  client.close()
})

t.test('an unknown app, its ready never awaited: no unhandled rejection', async (t) => {
  const client = createShellClient({ appKey: 'gone', getToken, baseUrl: url, storage: null })
  await waitFor(() => client.state.error !== null, 'the 404')
  t.equal(client.state.error?.status, 404)
  client.close()
  const awaited = createShellClient({ appKey: 'gone', getToken, baseUrl: url, storage: null })
  const error = await awaited.ready.then(
    () => undefined,
    (rejection: unknown) => rejection,
  )
  t.ok(error instanceof Error, 'ready rejects with an Error')
  t.equal((error as { status?: number }).status, 404, 'whose status is 404')
  awaited.close()
})

t.test('without baseUrl, a client not loaded from the service says what it needs', async (t) => {
  t.throws(() => createShellClient({ appKey: 'crm', getToken }), {
    name: 'TypeError',
    message: /baseUrl/,
  })
})

t.test(
  'gone while a GET is out: that GET is given up, and only refresh() asks again',
  async (t) => {
    // Answers as the test says: the shell's GETs are held, the stream is fed by hand.
    const gets: { response: ServerResponse; closed: boolean }[] = []
    let events: ServerResponse | undefined
    const server = createHttpServer((request, response) => {
      if (request.url?.endsWith('/events')) {
        events = response.writeHead(200, { 'content-type': 'text/event-stream' })
        return
      }
      const get = { response, closed: false }
      response.on('close', () => {
        get.closed = true
      })
      gets.push(get)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => {
      server.closeAllConnections()
      server.close()
    })
    const { port } = server.address() as AddressInfo
    const client = createShellClient({
      appKey: 'crm',
      getToken: () => 'a-token',
      baseUrl: `http://127.0.0.1:${port}`,
      storage: null,
      // Longer than the test: only `gone` can end the GET held.
      timeoutMs: 60_000,
    })
    await waitFor(() => gets.length === 1 && events !== undefined, 'the GET held, the stream open')
    events?.write('event: gone\ndata: {}\n\n')
    await waitFor(() => client.state.error?.status === 404, 'gone at the client')
    await waitFor(() => gets[0]?.closed === true, 'the GET out given up')
    t.same(client.state, {
      shell: null,
      etag: null,
      source: null,
      live: false,
      stale: false,
      error: { status: 404, detail: 'the app crm is gone' },
    })
    t.equal(gets.length, 1, 'stopped: no GET of its own')

    client.refresh()
    await waitFor(() => gets.length === 2, 'the GET of refresh()')
    const shell = {
      app: { key: 'crm', name: 'CRM', description: null, homeUrl: null },
      branding: {},
      user: { sub: 'user-1', username: null, name: null, email: null, roles: [] },
      menus: { topbar: [], sidebar: [], footer: [], 'user-menu': [] },
      locale: 'en',
    }
    gets[1]?.response.writeHead(200, { etag: '"back"' }).end(JSON.stringify(shell))
    const ready = await client.ready
    t.equal(ready.etag, '"back"', 'started again: the new answer shown')
    t.equal(ready.error, null)
    client.close()
  },
)

/** Past the first reopening of a failed stream (a backoff of at most 1 s): what would come has come. */
const QUIET_MS = 1_500

t.test('a stream refused with 401 twice in a row is not reopened until refresh()', async (t) => {
  /** Past exp by more than the service's 30 s of clock tolerance: a real 401, every time. */
  const expired = await jwks.sign(
    { sub: 'user-1', realm_access: { roles: ['crm-sales'] } },
    { expiresInS: -120 },
  )
  const asked: boolean[] = []
  let goodTokens = 1
  const client = createShellClient({
    appKey: 'crm',
    baseUrl: url,
    storage: null,
    // The GET asks first and gets a good token; the stream gets the expired one, renewed or not.
    getToken: ({ renew }) => {
      asked.push(renew)
      return goodTokens-- > 0 ? getToken() : expired
    },
  })
  await client.ready
  await waitFor(() => asked.length === 3, 'the stream refused twice')
  t.same(asked, [false, false, true], 'the GET, then the stream and its one renewal')
  await sleep(QUIET_MS)
  t.equal(asked.length, 3, 'not reopened: no loop of renewals')
  t.match(client.state, { live: false, error: null, stale: false }, 'the shell shown, not live')
  t.equal(await openStreams(), 0)

  goodTokens = Number.POSITIVE_INFINITY
  client.refresh()
  await waitFor(() => client.state.live, 'the stream open again after refresh()')
  client.close()
})

t.test('nothing ended in an unhandled rejection', async (t) => {
  // One more turn of the event loop, for rejections reported late.
  await new Promise((resolve) => setImmediate(resolve))
  t.same(unhandled, [])
  t.same(logs.leaks(), [])
})
