import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { findChromium, launchChromium } from '../helpers/browser.js'
import { createSeededDatabase } from '../helpers/service.js'
import { PACKAGE_ROOT, runNode, spawnService } from '../helpers/service-process.js'
import { waitFor } from '../helpers/wait.js'

/**
 * The page of docs/frame.md, the front-end teams' guide to `<shell-frame>`,
 * as a reader would try it: the service in local mode with the page's
 * origin in CORS_ORIGINS (started as `npm start` starts it, on a free port
 * instead of 8080), the page as the guide prints it served on another
 * origin, a token from `shell-data token`, and Chromium opening it; its
 * sign-out, then a reload, and a reload with the service stopped, which the
 * guide says what to expect of. And the React example of docs/client.md is
 * the one the type check compiles.
 */

const chromium = await findChromium()
const skip = 'skip' in chromium ? chromium.skip : false
/** Where the guide's page expects the service. */
const GUIDE_SERVICE = 'http://127.0.0.1:8080'
/** The guides for front-end teams: the element's prints the page, the client's the React example. */
const FRAME_GUIDE = 'docs/frame.md'
const CLIENT_GUIDE = 'docs/client.md'

/** The first html block after the guide's "A page with the frame". */
async function readExamplePage(): Promise<string> {
  const guide = await readFile(join(PACKAGE_ROOT, FRAME_GUIDE), 'utf8')
  const section = guide.slice(guide.indexOf('## A page with the frame'))
  const page = /```html\n([\s\S]*?)```/.exec(section)?.[1]
  if (page === undefined)
    throw new Error(`${FRAME_GUIDE}: no html block under "A page with the frame"`)
  return page
}

interface FrameView {
  readonly product: string | null
  readonly sidebar: string[]
  readonly note: string | null
  readonly source: string | null
}

t.test('the guide’s page with the frame works against the service', { skip }, async (t) => {
  if ('skip' in chromium) return
  const page = await readExamplePage()
  t.ok(page.includes(`${GUIDE_SERVICE}/client/v1/shell-frame.js`), 'it loads the served element')

  const port = await findFreePort()
  const serviceUrl = `http://127.0.0.1:${port}`
  const pages = await servePage(t, page.replaceAll(GUIDE_SERVICE, serviceUrl))
  const origin = `http://localhost:${pages.port}`
  const db = await createSeededDatabase(t)
  const settings = { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url }
  const service = spawnService(t, { ...settings, CORS_ORIGINS: origin, SHUTDOWN_DELAY_S: '0' })
  await service.waitForLine((line) => typeof line.preview === 'string', 'ready', 45_000)
  const printed = await runNode(
    'src/cli/main.ts',
    ['token', '--sub', 'alice', '--roles', 'crm-sales'],
    settings,
  )
  t.equal(printed.code, 0, printed.stderr)

  const browser = await launchChromium(t, chromium.path)
  const tab = await browser.newPage()
  const problems: string[] = []
  tab.on('pageerror', (error) => problems.push(error.message))
  await tab.goto(`${origin}/#token=${printed.stdout.trim()}`)
  const view = () =>
    tab.evaluate((): FrameView => {
      interface Node {
        textContent: string | null
        querySelector(selector: string): Node | null
        querySelectorAll(selector: string): ArrayLike<Node>
        shadowRoot: Node | null
        state: { source: string | null } | null
      }
      const { document } = globalThis as unknown as { document: Node }
      const frame = document.querySelector('shell-frame') as Node
      const root = frame.shadowRoot
      return {
        product: root?.querySelector('[part~=product-name]')?.textContent ?? null,
        sidebar: Array.from(
          root?.querySelectorAll('[data-zone=sidebar] > ul > li > a') ?? [],
          (link) => link.textContent ?? '',
        ),
        note: document.querySelector('#note')?.textContent ?? null,
        source: frame.state?.source ?? null,
      }
    })
  const waitForView = async (ready: (view: FrameView) => boolean, what: string) => {
    let seen: FrameView | undefined
    await waitFor(async () => {
      seen = await view()
      return ready(seen)
    }, what).catch((error: Error) => {
      throw new Error(`${error.message}; the page shows ${JSON.stringify(seen)}`)
    })
    return seen as FrameView
  }

  const first = await waitForView((view) => view.source === 'network', 'the frame')
  t.equal(first.product, 'Acme CRM')
  t.same(first.sidebar.slice(0, 4), ['Dashboard', 'Contacts', 'Accounts', 'Leads'], 'alice’s')

  const keptShells = () =>
    tab.evaluate(() => {
      const { localStorage } = globalThis as unknown as { localStorage: object }
      return Object.keys(localStorage).filter((key) => key.startsWith('shell-data:')).length
    })
  t.equal(await keptShells(), 1, 'alice’s shell kept')
  await tab.getByText('alice').click()
  await tab.getByRole('button', { name: 'Sign out' }).click()
  await waitForView((view) => view.note === 'Action: logout', 'the action on the page')
  t.pass('the page handles the action')
  t.equal(await keptShells(), 0, 'signed out: nothing of alice kept')

  await tab.reload()
  const again = await waitForView((view) => view.source === 'network', 'the frame again')
  t.same(again.sidebar, first.sidebar, 'drawn again after a reload')

  service.child.kill('SIGTERM')
  await service.exited
  await tab.reload()
  const offline = await waitForView(
    (view) => view.note === 'Offline: the last frame shown.',
    'the offline note',
  )
  t.equal(offline.source, 'storage', 'the stored frame, the module from the browser’s cache')
  t.same(offline.sidebar, first.sidebar)
  t.same(problems, [], 'no script error')
})

t.test('the guide’s React example is the one the type check compiles', async (t) => {
  const guide = await readFile(join(PACKAGE_ROOT, CLIENT_GUIDE), 'utf8')
  const section = guide.slice(guide.indexOf('## In a React component'))
  const example = /```tsx\n([\s\S]*?)```/.exec(section)?.[1]
  const checked = await readFile(join(PACKAGE_ROOT, 'test/client/consumer-react.tsx'), 'utf8')
  t.ok(example, 'a tsx block under "In a React component"')
  t.equal(checked.slice(checked.indexOf('*/\n') + 3), example, 'test/client/consumer-react.tsx')
})

async function servePage(
  t: { teardown(fn: () => unknown): void },
  page: string,
): Promise<{ port: number }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end(page)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port: (server.address() as AddressInfo).port }
}
