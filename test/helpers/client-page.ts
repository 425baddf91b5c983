import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrowserContext, Page } from 'playwright-core'
import { launchChromium } from './browser.js'
import {
  type LogCapture,
  startTestService,
  type TestService,
  type TestServiceOptions,
} from './service.js'
import { waitFor } from './wait.js'

/**
 * A front end on another origin, as the client modules meet it: a tiny page
 * server on its own port (http://localhost:P, while the service listens on
 * 127.0.0.1:Q), a service whose CORS_ORIGINS lists that origin, and Chromium
 * loading the page, which imports shell-client.js (or shell-frame.js) from
 * the service. The page's `harness` creates clients whose `getToken` asks
 * this process (a token signed by the test's JWKS server, or whatever the
 * test's policy gives), and records what they show.
 */

/** What the page keeps of a state: enough to compare, small enough to read back often. */
export interface SeenState {
  readonly source: 'storage' | 'network' | null
  readonly etag: string | null
  readonly live: boolean
  readonly stale: boolean
  readonly error: { readonly status: number; readonly detail: string } | null
  /** The shell's user id, null without a shell. */
  readonly sub: string | null
  /** The side bar's labels, null without a shell. */
  readonly sidebar: readonly string[] | null
  readonly frozen: boolean
  /** performance.now() in the page when the listener got it. */
  readonly at: number
}

export interface ClientRecord {
  readonly states: SeenState[]
  /** `pending`, `resolved`, or `rejected <status>` (the Error's `status`). */
  readonly ready: string
}

/** The client options a test may give; `storage` by name, as the page makes it. */
export interface ClientStartOptions {
  readonly appKey?: string
  readonly sub?: string
  readonly baseUrl?: string
  readonly locales?: readonly string[]
  readonly live?: boolean
  readonly timeoutMs?: number
  /** `local` (default: the client's default, localStorage), `none` (null) or `throwing`. */
  readonly storage?: 'local' | 'none' | 'throwing'
  /** Leave `ready` alone, as a page that never awaits it does. */
  readonly ignoreReady?: boolean
}

/** Gives the token for one `getToken` call of the named client. */
export type TokenPolicy = (context: { renew: boolean }) => Promise<string>

/** A request the page sent, as Chromium saw it. */
export interface SeenRequest {
  readonly url: string
  readonly method: string
  /** The headers the page gave it. */
  readonly headers: Record<string, string>
  /**
   * Every header sent, the browser's own included (its HTTP cache's
   * If-None-Match): set once Chromium has said, by the time the request ended.
   */
  sentHeaders?: Record<string, string>
  /** Date.now() in this process when the request went out. */
  readonly at: number
  /** Set when its response arrived: its status; -1 when it failed before one did. */
  status?: number
  failure?: string
  /** Date.now() when it ended: its body read whole, or it failed (a stream ends when it closes). */
  doneAt?: number
}

export interface ClientPage {
  readonly page: Page
  /** Every request of the page to the service's API, in order. */
  readonly requests: SeenRequest[]
  /** Script errors and unhandled rejections on the page. */
  problems(): Promise<string[]>
  start(name: string, options?: ClientStartOptions): Promise<void>
  read(name: string): Promise<ClientRecord>
  /** Waits until the named client's latest state satisfies `ready`; returns it. */
  waitForState(
    name: string,
    ready: (state: SeenState) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<SeenState>
  refresh(name: string): Promise<void>
  close(name: string): Promise<void>
  /** The module's `clearStoredShells()`, as a page calls it at sign-out. */
  clearStoredShells(): Promise<void>
  /** localStorage of the page's origin. */
  storage(): Promise<Record<string, string>>
  /**
   * What document.visibilityState says, and the visibilitychange a browser
   * fires when a tab goes to the background or comes back: headless Chromium
   * never hides a page by itself.
   */
  setVisibility(visibility: 'hidden' | 'visible'): Promise<void>
}

export interface ClientPages {
  readonly service: TestService
  readonly browser: BrowserContext
  /** `http://localhost:P`, the page's origin. */
  readonly origin: string
  /** The `getToken` calls of each client, in order. */
  readonly tokenCalls: Map<string, { renew: boolean }[]>
  /**
   * How many answers of `status` the service gave to GETs of the shell so
   * far: what crossed the wire, where the page sees its HTTP cache's 200.
   */
  shellAnswers(status: number): Promise<number>
  /** How the named client's tokens are made; default: a token for `user-1` with crm-sales. */
  setTokens(name: string, policy: TokenPolicy): void
  /**
   * Opens the client page (`client.html`) or, at any other path, the app's
   * page with the frame; with `sameOrigin`, the same page at the service's
   * own origin (as a portal's reverse proxy would put them together).
   */
  open(
    path?: string,
    options?: { fakeClock?: boolean; sameOrigin?: boolean; initScript?: string },
  ): Promise<ClientPage>
}

/** The harness the page runs: plain JavaScript, as a front end's own script is. */
const HARNESS = `
const records = new Map()
const clients = new Map()
const throwingStorage = {
  getItem() { throw new Error('storage disabled') },
  setItem() { throw new Error('quota exceeded') },
  removeItem() { throw new Error('storage disabled') },
}
function summarize(state) {
  return {
    source: state.source, etag: state.etag, live: state.live, stale: state.stale, error: state.error,
    sub: state.shell === null ? null : state.shell.user.sub,
    sidebar: state.shell === null ? null : state.shell.menus.sidebar.map((item) => item.label),
    frozen: Object.isFrozen(state), at: performance.now(),
  }
}
export function createHarness({ createShellClient, clearStoredShells }, service) {
  return {
    start(name, options) {
      const record = { states: [], ready: 'pending' }
      records.set(name, record)
      const { storage, ignoreReady, ...rest } = options
      const client = createShellClient({
        appKey: 'crm',
        baseUrl: service,
        ...rest,
        ...(storage === 'none' ? { storage: null } : storage === 'throwing' ? { storage: throwingStorage } : {}),
        getToken: (context) => window.mintToken(name, context),
      })
      clients.set(name, client)
      client.subscribe((state) => record.states.push(summarize(state)))
      if (!ignoreReady) client.ready.then(() => { record.ready = 'resolved' }, (error) => { record.ready = 'rejected ' + error.status })
    },
    read(name) { return records.get(name) },
    refresh(name) { clients.get(name).refresh() },
    close(name) { clients.get(name).close() },
    clearStoredShells() { clearStoredShells() },
  }
}
`

const CLIENT_PAGE = `<!doctype html>
<html lang="en"><meta charset="utf-8"><title>a front end on another origin</title>
<script>
  window.problems = []
  addEventListener('error', (event) => window.problems.push('error: ' + event.message))
  addEventListener('unhandledrejection', (event) => window.problems.push('unhandled rejection: ' + (event.reason && event.reason.message || event.reason)))
</script>
<script type="module">
  import { createHarness } from '/harness.js'
  const query = new URLSearchParams(location.search)
  if (query.has('count-stream-chunks')) {
    // What the client reads of its event streams, counted as it reads: comments included.
    window.streamChunks = 0
    const realFetch = window.fetch
    window.fetch = async (url, init) => {
      const response = await realFetch(url, init)
      if (!String(url).endsWith('/events') || response.body === null) return response
      const counted = response.body.pipeThrough(new TransformStream({
        transform(chunk, controller) { window.streamChunks += 1; controller.enqueue(chunk) },
      }))
      return new Response(counted, response)
    }
  }
  const service = query.get('service')
  window.harness = createHarness(await import(service + '/client/v1/shell-client.js'), service)
</script>
<p>a page of a front end</p></html>`

/**
 * A page of the app, at any other path: its script makes a `<shell-frame>`
 * whose attributes are the query's (`app`, `base-url`, `label-sidebar`…; the
 * page's own language from `page-lang`), sets its getToken before
 * the element is defined, then imports shell-frame.js from the service, so
 * the element takes up the property when it is defined. `readFrame()`
 * reads what it drew; `actions` records the `shell-action` events that
 * reached the document, cancelled when `cancelActions` is true.
 */
const FRAME_PAGE = `<!doctype html>
<html lang="en"><meta charset="utf-8"><title>a page of the app</title>
<script>
  window.problems = []
  addEventListener('error', (event) => window.problems.push('error: ' + event.message))
  addEventListener('unhandledrejection', (event) => window.problems.push('unhandled rejection: ' + (event.reason && event.reason.message || event.reason)))
  window.actions = []
  window.cancelActions = false
  document.addEventListener('shell-action', (event) => {
    window.actions.push({ id: event.detail.id, target: event.target.tagName.toLowerCase(), bubbles: event.bubbles, composed: event.composed, cancelable: event.cancelable })
    if (window.cancelActions) event.preventDefault()
  })
  function labelOf(control) {
    if (control.matches('[role=search]')) return control.querySelector('input').getAttribute('aria-label')
    return control.tagName === 'A' ? control.firstChild.textContent : control.textContent
  }
  function readList(list) {
    return Array.from(list ? list.children : [], (entry) => ({
      id: entry.dataset.itemId, part: entry.getAttribute('part'), label: labelOf(entry.firstElementChild),
      children: readList(entry.querySelector(':scope > ul')),
    }))
  }
  window.readFrame = () => {
    const root = document.querySelector('shell-frame').shadowRoot
    const zones = {}
    for (const zone of root.querySelectorAll('[data-zone]')) {
      zones[zone.dataset.zone] = { tag: zone.tagName.toLowerCase(), part: zone.getAttribute('part'), label: zone.getAttribute('aria-label'), items: readList(zone.querySelector(':scope > ul')) }
    }
    const text = (selector) => (root.querySelector(selector) || {}).textContent || null
    return { zones, product: text('[part~=product-name]'), user: text('[part~=user-name]'), footerText: text('[part~=footer-text]') }
  }
</script>
<script type="module">
  const params = new URLSearchParams(location.search)
  const frame = document.createElement('shell-frame')
  for (const [name, value] of params) if (name !== 'service' && name !== 'page-lang') frame.setAttribute(name, value)
  if (params.has('page-lang')) document.documentElement.lang = params.get('page-lang')
  frame.getToken = (context) => window.mintToken('frame', context)
  frame.innerHTML = '<main><h1>A page of the app</h1><p>Its own content.</p></main>'
  document.body.append(frame)
  await import(params.get('service') + '/client/v1/shell-frame.js')
</script>
<body></body></html>`

export async function startClientPages(
  t: { teardown(fn: () => unknown): void },
  chromiumPath: string,
  options: { logs: LogCapture; env?: Record<string, string> } & Pick<
    TestServiceOptions,
    'db' | 'jwks'
  >,
): Promise<ClientPages> {
  const pages = await startPageServer(t)
  const origin = `http://localhost:${pages.port}`
  const service = await startTestService(t, {
    logs: options.logs,
    ...(options.db === undefined ? {} : { db: options.db }),
    ...(options.jwks === undefined ? {} : { jwks: options.jwks }),
    env: { CORS_ORIGINS: origin, ...options.env },
  })
  const browser = await launchChromium(t, chromiumPath)
  const tokenCalls = new Map<string, { renew: boolean }[]>()
  const policies = new Map<string, TokenPolicy>()
  const defaultPolicy: TokenPolicy = () => service.token({ sub: 'user-1', roles: ['crm-sales'] })
  await browser.exposeFunction('mintToken', (name: string, context: { renew: boolean }) => {
    const calls = tokenCalls.get(name) ?? []
    calls.push({ renew: context.renew })
    tokenCalls.set(name, calls)
    return (policies.get(name) ?? defaultPolicy)(context)
  })

  return {
    service,
    browser,
    origin,
    tokenCalls,
    async shellAnswers(status) {
      const { values } = await service.service.metrics.httpRequestDuration.get()
      const answers = values.find(
        (value) =>
          value.metricName === 'shell_http_request_duration_seconds_count' &&
          value.labels.route === '/api/v1/shell/:appKey' &&
          value.labels.method === 'GET' &&
          String(value.labels.status_code) === String(status),
      )
      return answers?.value ?? 0
    },
    setTokens(name, policy) {
      policies.set(name, policy)
    },
    async open(path = 'client.html', openOptions = {}) {
      const page = await browser.newPage()
      // Timers and Date under the test's hand; the network stays real.
      if (openOptions.fakeClock === true) await page.clock.install()
      if (openOptions.initScript !== undefined) await page.addInitScript(openOptions.initScript)
      const requests: SeenRequest[] = []
      const byRequest = new Map<unknown, SeenRequest>()
      page.on('request', (request) => {
        if (!request.url().includes('/api/v1/')) return
        const seen: SeenRequest = {
          url: request.url(),
          method: request.method(),
          headers: request.headers(),
          at: Date.now(),
        }
        requests.push(seen)
        byRequest.set(request, seen)
      })
      page.on('response', (response) => {
        const seen = byRequest.get(response.request())
        if (seen !== undefined) seen.status = response.status()
      })
      page.on('requestfinished', (request) => {
        const seen = byRequest.get(request)
        if (seen === undefined) return
        seen.doneAt = Date.now()
        request.allHeaders().then(
          (headers) => {
            seen.sentHeaders = headers
          },
          () => {},
        )
      })
      page.on('requestfailed', (request) => {
        const seen = byRequest.get(request)
        if (seen !== undefined) seen.doneAt ??= Date.now()
        // Chromium reports a fetch's 304, which has no body to read, as aborted after its response.
        if (seen === undefined || seen.status !== undefined) return
        seen.status = -1
        seen.failure = request.failure()?.errorText ?? 'failed'
      })
      const pageErrors: string[] = []
      page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
      const separator = path.includes('?') ? '&' : '?'
      let pageOrigin = origin
      if (openOptions.sameOrigin === true) {
        // The service serves no pages: the browser is given the page server's as the service's.
        pageOrigin = service.url
        const served = `http://localhost:${pages.port}`
        await page.route(
          (url) => url.origin === service.url && !/^\/(api|client)\//.test(url.pathname),
          async (route) => {
            const url = new URL(route.request().url())
            const answer = await fetch(`${served}${url.pathname}${url.search}`)
            await route.fulfill({
              status: answer.status,
              contentType: answer.headers.get('content-type') ?? 'text/html',
              body: await answer.text(),
            })
          },
        )
      }
      await page.goto(`${pageOrigin}/${path}${separator}service=${encodeURIComponent(service.url)}`)
      if (path.startsWith('client.html')) {
        await page.waitForFunction(() => 'harness' in globalThis, undefined, { timeout: 15_000 })
      }
      return createClientPage(page, requests, pageErrors)
    },
  }
}

/** What the page's `harness` is, as this process calls it through page.evaluate. */
interface PageHarness {
  start(name: string, options: ClientStartOptions): void
  read(name: string): ClientRecord
  refresh(name: string): void
  close(name: string): void
  clearStoredShells(): void
}

function createClientPage(page: Page, requests: SeenRequest[], pageErrors: string[]): ClientPage {
  const read = (name: string) =>
    page.evaluate(
      (name) => (globalThis as unknown as { harness: PageHarness }).harness.read(name),
      name,
    )
  return {
    page,
    requests,
    async problems() {
      const inPage = await page.evaluate(
        () => (globalThis as unknown as { problems: string[] }).problems,
      )
      return [...pageErrors, ...inPage]
    },
    start: (name, options = {}) =>
      page.evaluate(
        ([name, options]) =>
          (globalThis as unknown as { harness: PageHarness }).harness.start(name, options),
        [name, options] as const,
      ),
    read,
    async waitForState(name, ready, what, timeoutMs = 15_000) {
      let latest: SeenState | undefined
      await waitFor(
        async () => {
          latest = (await read(name)).states.at(-1)
          return latest !== undefined && ready(latest)
        },
        `${name}: ${what}`,
        timeoutMs,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; it shows ${JSON.stringify(latest)}`)
      })
      return latest as SeenState
    },
    refresh: (name) =>
      page.evaluate(
        (name) => (globalThis as unknown as { harness: PageHarness }).harness.refresh(name),
        name,
      ),
    close: (name) =>
      page.evaluate(
        (name) => (globalThis as unknown as { harness: PageHarness }).harness.close(name),
        name,
      ),
    clearStoredShells: () =>
      page.evaluate(() =>
        (globalThis as unknown as { harness: PageHarness }).harness.clearStoredShells(),
      ),
    setVisibility: (visibility) =>
      page.evaluate((visibility) => {
        const document = (
          globalThis as unknown as { document: { dispatchEvent(event: unknown): boolean } }
        ).document
        Object.defineProperty(document, 'visibilityState', {
          configurable: true,
          get: () => visibility,
        })
        document.dispatchEvent(new Event('visibilitychange'))
      }, visibility),
    storage: () =>
      page.evaluate(() => {
        const storage = (globalThis as unknown as { localStorage: Record<string, string> })
          .localStorage
        return { ...storage }
      }),
  }
}

/** The pages: client.html and its harness, and the app's page with the frame at any other path. */
async function startPageServer(t: {
  teardown(fn: () => unknown): void
}): Promise<{ port: number }> {
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    if (path === '/harness.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(HARNESS)
    } else if (path === '/client.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CLIENT_PAGE)
    } else {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(FRAME_PAGE)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port: (server.address() as AddressInfo).port }
}
