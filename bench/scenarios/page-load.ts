import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import { findChromium } from '../../test/helpers/browser.js'
import { startTcpProxy } from '../../test/helpers/tcp-proxy.js'
import { readCpuSeconds } from '../process-resources.js'
import { readMetrics } from '../read-metrics.js'
import { passOrMiss, type Row, type Scenario } from '../scenario.js'

/**
 * One user loading a page of a front end 20 times, in real Chromium (Debian's,
 * through playwright-core, as the tests drive it): the page on another
 * origin, the service's own instance with that origin in CORS_ORIGINS, a
 * TCP proxy in front of it counting the bytes on the wire both ways.
 *
 * - `client`: the page imports /client/v1/shell-client.js from the service
 *   and creates a client with the `sub` option and the browser's
 *   localStorage, kept across the loads with the browser's HTTP cache; a load
 *   is done when the shell is confirmed by the network and the event stream
 *   is open (the default, `live`), and the page is then left.
 * - `plain`: the page fetches the shell with the same token, keeping nothing
 *   (`cache: 'no-store'`): the page every consuming team writes by hand.
 *
 * Per load: requests the service answered (its request histogram, CORS
 * preflights included), bytes on the wire, and the service's CPU time
 * (/proc, over all loads); for the client, the time from the module's import
 * to the first state drawn from storage. The first load is shown apart: it
 * fetches the module and makes the preflights that the browser then keeps.
 */

const LOADS = 20
/** CONTRACT-free aim of the issue: a page load after the first costs at most a tenth of the bytes. */
const MAX_BYTES_RATIO = 0.1

interface LoadFigures {
  readonly requests: number
  readonly bytesDown: number
  readonly bytesUp: number
  readonly fromStorageMs: number | null
}

/** The page of the front end; what it needs comes in the fragment, which no server sees. */
const CLIENT_PAGE = `<!doctype html><meta charset="utf-8"><title>with the client</title>
<script type="module">
  const params = new URLSearchParams(location.hash.slice(1))
  const token = params.get('token')
  const importedAt = performance.now()
  const { createShellClient } = await import(params.get('api') + '/client/v1/shell-client.js')
  const client = createShellClient({ appKey: 'crm', sub: params.get('sub'), getToken: async () => token })
  let fromStorageMs = null
  client.subscribe((state) => {
    if (fromStorageMs === null && state.source === 'storage') fromStorageMs = performance.now() - importedAt
    if (state.source === 'network' && state.live) window.done = { fromStorageMs }
  })
</script>`

const PLAIN_PAGE = `<!doctype html><meta charset="utf-8"><title>fetching by hand</title>
<script type="module">
  const params = new URLSearchParams(location.hash.slice(1))
  const response = await fetch(params.get('api') + '/api/v1/shell/crm', {
    headers: { authorization: 'Bearer ' + params.get('token') },
    cache: 'no-store',
  })
  await response.json()
  window.done = { fromStorageMs: null }
</script>`

export const pageLoad: Scenario = {
  id: 'page-load',
  run: async ({ env, log }) => {
    const browserPath = await findChromium()
    if ('skip' in browserPath) {
      return { rows: [{ scenario: 'page load', value: 'skipped' }], notes: [browserPath.skip] }
    }
    const pages = await startPageServer()
    const origin = `http://localhost:${pages.port}`
    const { url: databaseUrl } = await env.createDatabase('bench_page_load', { apps: 0 })
    const service = await env.startService('service-page-load', databaseUrl, {
      CORS_ORIGINS: origin,
    })
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(service.url).port))
    const browser = await chromium.launch({
      executablePath: browserPath.path,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    })
    try {
      const token = env.warmTokens[0] ?? ''
      const sub = String(
        JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub,
      )
      const fragment = new URLSearchParams({ api: `http://127.0.0.1:${proxy.port}`, token, sub })
      const measure = async (page: string) => {
        // A profile of its own per side: nothing cached, nothing stored, at the start.
        const context = await browser.newContext()
        const tab = await context.newPage()
        const loads: LoadFigures[] = []
        const cpuBefore = await readCpuSeconds(service.pid)
        for (let load = 0; load < LOADS; load += 1) {
          const requestsBefore = await countRequests(service.url)
          const bytesBefore = { ...proxy.bytes }
          await tab.goto(`${origin}/${page}#${fragment}`)
          const done = (await (
            await tab.waitForFunction(() => (globalThis as { done?: unknown }).done, undefined, {
              timeout: 30_000,
            })
          ).jsonValue()) as { fromStorageMs: number | null }
          // Leaving the page ends its event stream; its bytes are in before the next load.
          await tab.goto('about:blank')
          loads.push({
            requests: (await countRequests(service.url)) - requestsBefore,
            bytesDown: proxy.bytes.down - bytesBefore.down,
            bytesUp: proxy.bytes.up - bytesBefore.up,
            fromStorageMs: done.fromStorageMs,
          })
        }
        const cpuUsPerLoad = (((await readCpuSeconds(service.pid)) - cpuBefore) * 1e6) / LOADS
        await context.close()
        log(`page-load ${page}: ${JSON.stringify(loads.map((load) => load.bytesDown))} bytes down`)
        return { loads, cpuUsPerLoad }
      }
      const client = await measure('client.html')
      const plain = await measure('plain.html')
      return summarize(client, plain)
    } finally {
      await browser.close()
      await proxy.close()
      await service.stop()
      await pages.close()
    }
  },
}

interface Side {
  readonly loads: readonly LoadFigures[]
  readonly cpuUsPerLoad: number
}

function summarize(client: Side, plain: Side): { rows: Row[]; notes: string[] } {
  const later = (side: Side) => side.loads.slice(1)
  const mean = (loads: readonly LoadFigures[], pick: (load: LoadFigures) => number) =>
    loads.reduce((sum, load) => sum + pick(load), 0) / loads.length
  const describe = (loads: readonly LoadFigures[]) =>
    `${mean(loads, (load) => load.requests).toFixed(1)} req, ${Math.round(mean(loads, (load) => load.bytesDown))} B down, ${Math.round(mean(loads, (load) => load.bytesUp))} B up`
  const total = (load: LoadFigures) => load.bytesDown + load.bytesUp
  const downRatio =
    mean(later(client), (load) => load.bytesDown) / mean(later(plain), (load) => load.bytesDown)
  const totalRatio = mean(later(client), total) / mean(later(plain), total)
  const fromStorage = later(client)
    .map((load) => load.fromStorageMs)
    .filter((ms): ms is number => ms !== null)
    .sort((a, b) => a - b)
  const median = fromStorage[Math.floor(fromStorage.length / 2)] ?? Number.NaN
  return {
    rows: [
      {
        scenario: `page load, client: first of ${LOADS}`,
        value: describe(client.loads.slice(0, 1)),
      },
      { scenario: `page load, client: loads 2 to ${LOADS}, each`, value: describe(later(client)) },
      {
        scenario: `page load, plain fetch: first of ${LOADS}`,
        value: describe(plain.loads.slice(0, 1)),
      },
      {
        scenario: `page load, plain fetch: loads 2 to ${LOADS}, each`,
        value: describe(later(plain)),
      },
      {
        scenario: '  client over plain, bytes down (server to browser), loads 2+',
        value: `${downRatio.toFixed(2)}`,
        target: `<= ${MAX_BYTES_RATIO.toFixed(2)}`,
        result: passOrMiss(downRatio <= MAX_BYTES_RATIO),
      },
      {
        scenario: '  client over plain, bytes both ways, loads 2+',
        value: `${totalRatio.toFixed(2)}`,
      },
      {
        scenario: '  server CPU per load, client / plain',
        value: `${Math.round(client.cpuUsPerLoad)} / ${Math.round(plain.cpuUsPerLoad)} µs`,
      },
      {
        scenario: `  client: module import to first state from storage (median of ${fromStorage.length})`,
        value: `${median.toFixed(1)} ms`,
      },
    ],
    notes: [
      `real Chromium, one user, ${LOADS} loads per side, each page left before the next; bytes counted by a TCP proxy in front of the service (headers, bodies, the stream's first event; the token alone is ${'~1.1 KB'} of every request); requests from the service's request histogram, CORS preflights included; CPU from /proc over all loads of a side, the service idle otherwise`,
    ],
  }
}

/** The two pages, on an origin of their own (http://localhost:P; the service is on 127.0.0.1). */
async function startPageServer(): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const page = request.url?.startsWith('/client.html') ? CLIENT_PAGE : PLAIN_PAGE
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Requests the service answered so far, /metrics (this scenario's own reads) aside. */
async function countRequests(serviceUrl: string): Promise<number> {
  let count = 0
  for (const [series, value] of await readMetrics(serviceUrl)) {
    if (
      series.startsWith('shell_http_request_duration_seconds_count{') &&
      !series.includes('route="/metrics"')
    )
      count += value
  }
  return count
}
