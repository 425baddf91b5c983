import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { negotiateCoding } from '../../src/http/accept-encoding.js'
import { findChromium, launchChromium } from '../helpers/browser.js'
import { httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'

/**
 * CORS as a browser enforces it: Debian's Chromium loads a page from another
 * origin whose script fetches the shell with a Bearer token (compressed, in
 * the coding the browser's own Accept-Encoding asks for, and decoded by it),
 * revalidates it to a 304, reads the exposed headers, a 401's challenge and
 * the event stream; the same page from an origin that is not listed is
 * refused by the browser.
 */

const chromiumFound = await findChromium()
const skip = 'skip' in chromiumFound ? chromiumFound.skip : false

/** What the page's script found out, written to `window.result`. */
interface PageResult {
  readonly shell?: {
    readonly status: number
    readonly etag: string | null
    readonly contentLanguage: string | null
    readonly roles: string[]
  }
  readonly revalidated?: { readonly status: number; readonly etag: string | null }
  readonly unauthorized?: { readonly status: number; readonly challenge: string | null }
  readonly firstEvent?: string
  readonly error?: { readonly name: string; readonly message: string }
}

/**
 * The page: its script takes the API's address and a token from the URL
 * fragment (never sent to a server), calls the API as a shell front end would,
 * and leaves what it saw in `window.result`.
 */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>a portal on another origin</title>
<script type="module">
  const params = new URLSearchParams(location.hash.slice(1))
  const api = params.get('api')
  const authorization = 'Bearer ' + params.get('token')
  const shellUrl = api + '/api/v1/shell/crm'
  try {
    const first = await fetch(shellUrl, { headers: { authorization }, cache: 'no-store' })
    const etag = first.headers.get('etag')
    const shell = {
      status: first.status,
      etag,
      contentLanguage: first.headers.get('content-language'),
      roles: (await first.json()).user.roles,
    }
    const second = await fetch(shellUrl, {
      headers: { authorization, 'if-none-match': etag },
      cache: 'no-store',
    })
    const revalidated = { status: second.status, etag: second.headers.get('etag') }
    const anonymous = await fetch(shellUrl, { cache: 'no-store' })
    const unauthorized = {
      status: anonymous.status,
      challenge: anonymous.headers.get('www-authenticate'),
    }
    const abort = new AbortController()
    const events = await fetch(shellUrl + '/events', {
      headers: { authorization, 'last-event-id': 'none-yet' },
      signal: abort.signal,
    })
    const reader = events.body.pipeThrough(new TextDecoderStream()).getReader()
    const firstEvent = (await reader.read()).value
    abort.abort()
    window.result = { shell, revalidated, unauthorized, firstEvent }
  } catch (error) {
    window.result = { error: { name: error.name, message: error.message } }
  }
</script>
<p>calling the shell data service</p>`

t.test('Chromium: a page on another origin', { skip }, async (t) => {
  const pages = await startPageServer(t)
  // One page server, two origins: the browser tells http://localhost:P from http://127.0.0.1:P.
  const listedOrigin = `http://localhost:${pages.port}`
  const unlistedOrigin = `http://127.0.0.1:${pages.port}`
  const logs = createLogCapture()
  const { url, token } = await startTestService(t, {
    logs,
    env: { CORS_ORIGINS: listedOrigin },
  })
  const caller = await token({ sub: 'ada', roles: ['crm-sales'] })
  if ('skip' in chromiumFound) return
  const browser = await launchChromium(t, chromiumFound.path)

  /** A GET of the shell as the browser sent and got it. */
  interface ShellExchange {
    readonly acceptEncoding: string | undefined
    readonly status: number
    readonly contentEncoding: string | undefined
  }

  async function openPage(
    origin: string,
  ): Promise<{ result: PageResult; console: string[]; shellExchanges: ShellExchange[] }> {
    const page = await browser.newPage()
    const console: string[] = []
    page.on('console', (message) => console.push(`${message.type()}: ${message.text()}`))
    const exchanges: Promise<ShellExchange>[] = []
    page.on('response', (response) => {
      const request = response.request()
      if (!request.url().endsWith('/api/v1/shell/crm') || request.method() !== 'GET') return
      // allHeaders: those the network stack added too (Accept-Encoding is one).
      exchanges.push(
        Promise.all([request.allHeaders(), response.allHeaders()]).then(([sent, got]) => ({
          acceptEncoding: sent['accept-encoding'],
          status: response.status(),
          contentEncoding: got['content-encoding'],
        })),
      )
    })
    const fragment = new URLSearchParams({ api: url, token: caller })
    await page.goto(`${origin}/portal.html#${fragment}`)
    const result = (await (
      await page.waitForFunction(() => (globalThis as { result?: unknown }).result, undefined, {
        timeout: 30_000,
      })
    ).jsonValue()) as PageResult
    const shellExchanges = await Promise.all(exchanges)
    await page.close()
    return { result, console, shellExchanges }
  }

  await t.test('listed: the shell, a 304 on revalidation, exposed headers, events', async (t) => {
    const { result, console, shellExchanges } = await openPage(listedOrigin)
    t.comment(`page on ${listedOrigin} saw: ${JSON.stringify(result)}`)
    t.notOk(result.error, 'no fetch failed')
    t.equal(result.shell?.status, 200)
    t.match(result.shell?.etag, /^"[^"]+"$/, 'the ETag is readable')
    t.equal(result.shell?.contentLanguage, 'en', 'Content-Language is readable')
    t.same(result.shell?.roles, ['crm-sales'])
    t.equal(result.revalidated?.status, 304, 'the 304 reaches the script')
    t.equal(result.revalidated?.etag, result.shell?.etag)
    const [first, second] = shellExchanges
    const coding = negotiateCoding(first?.acceptEncoding ?? '')
    t.comment(`Chromium sent Accept-Encoding: ${first?.acceptEncoding}`)
    t.ok(coding === 'br' || coding === 'gzip', 'Chromium accepts a coding the service sends')
    t.equal(
      first?.contentEncoding,
      coding,
      'the shell came compressed, and the page read it decoded',
    )
    t.ok(result.shell?.etag?.endsWith(`.${coding === 'br' ? 'br' : 'gz'}"`), "the coding's own tag")
    t.equal(second?.status, 304, 'revalidated with that tag: a 304')
    t.equal(result.unauthorized?.status, 401)
    t.match(result.unauthorized?.challenge, /^Bearer realm="shell"/, 'WWW-Authenticate is readable')
    t.match(result.firstEvent, /^event: shell\nid: /, 'the event stream, with Last-Event-ID')
    t.notOk(
      console.some((line) => /CORS|Access-Control/i.test(line)),
      'no CORS complaint on the console (Chromium logs the 401 itself)',
    )
  })

  await t.test('not listed: the browser refuses, after a 403 preflight', async (t) => {
    const refusedBefore = await countPreflights(url, '403')
    const { result, console } = await openPage(unlistedOrigin)
    t.comment(`page on ${unlistedOrigin} saw: ${JSON.stringify(result)}`)
    for (const line of console) t.comment(`its console: ${line}`)
    t.equal(result.error?.name, 'TypeError', 'fetch rejects')
    t.notOk(result.shell, 'the script got no response')
    t.equal(await countPreflights(url, '403'), refusedBefore + 1, 'the service refused a preflight')
    t.ok(
      console.some((line) => line.includes(`origin '${unlistedOrigin}'`) && /CORS/.test(line)),
      'Chromium names CORS and the origin',
    )
  })

  t.same(logs.leaks(), [])
})

/** OPTIONS answered with `status` on the shell route, from the service's own metrics. */
async function countPreflights(url: string, status: string): Promise<number> {
  const text = (await httpRequest(url, '/metrics')).text
  const sample = text
    .split('\n')
    .find(
      (line) =>
        line.startsWith('shell_http_request_duration_seconds_count{') &&
        line.includes('route="/api/v1/shell/:appKey"') &&
        line.includes('method="OPTIONS"') &&
        line.includes(`status_code="${status}"`),
    )
  return sample === undefined ? 0 : Number(sample.split(' ').at(-1))
}

/** A plain node:http server that serves the page at any path. */
async function startPageServer(t: Test): Promise<{ port: number }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port: (server.address() as AddressInfo).port }
}
