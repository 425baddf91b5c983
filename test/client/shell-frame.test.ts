import type { Page } from 'playwright-core'
import type { Shell, ShellMenuItem, ShellZone } from 'shell-data-service/client'
import t from 'tap'
import { findChromium } from '../helpers/browser.js'
import { startClientPages } from '../helpers/client-page.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { createLogCapture } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/**
 * `<shell-frame>` (CONTRACT.md 13) in Chromium, on a page of the app on
 * another origin that loads shell-frame.js from the service: the zones and
 * items against the API's own body, nested children, link attributes, the
 * search form, the `shell-action` event, the brand colours, a live relabel,
 * `live="false"`, `storage="none"`, a getToken set before the element was
 * defined, its landmarks, labels and keyboard order as assistive technology
 * finds them, its names from `label-*` in the page's language, `aria-current`
 * after pushState and replaceState, and no landmark for an empty zone.
 */

const chromium = await findChromium()
const skip = 'skip' in chromium ? chromium.skip : false
const ZONES: readonly ShellZone[] = ['topbar', 'sidebar', 'user-menu', 'footer']
const ZONE_LABELS = {
  topbar: 'Top bar',
  sidebar: 'Side bar',
  'user-menu': 'User menu',
  footer: 'Footer',
}
/** The page of the app the frame is on: the contacts page, in German. */
const PAGE = 'crm/contacts?app=crm&locales=de,en'

/** An item as the page's readFrame() reads it from the shadow root. */
interface DrawnItem {
  readonly id: string
  readonly part: string
  readonly label: string
  readonly children: readonly DrawnItem[]
}

interface DrawnFrame {
  readonly zones: Record<
    ShellZone,
    { tag: string; part: string; label: string; items: DrawnItem[] }
  >
  readonly product: string | null
  readonly user: string | null
  readonly footerText: string | null
}

function readFrame(page: Page): Promise<DrawnFrame> {
  return page.evaluate(() => (globalThis as unknown as { readFrame(): DrawnFrame }).readFrame())
}

async function waitForFrame(
  page: Page,
  ready: (frame: DrawnFrame) => boolean,
  what: string,
): Promise<DrawnFrame> {
  let frame: DrawnFrame | undefined
  await waitFor(async () => {
    frame = await readFrame(page).catch(() => undefined)
    return frame !== undefined && ready(frame)
  }, what)
  return frame as DrawnFrame
}

/** What the frame should draw of the API's items. */
function expectedItems(items: readonly ShellMenuItem[]): DrawnItem[] {
  return items.map((item) => ({
    id: item.id,
    part: 'item',
    label: item.label,
    children: expectedItems(item.children),
  }))
}

/** A focused element inside the frame, or on the page, as a short description. */
function describeFocus(page: Page): Promise<string> {
  return page.evaluate(() => {
    interface Focusable {
      tagName: string
      textContent: string | null
      getAttribute(name: string): string | null
      shadowRoot: { activeElement: Focusable | null } | null
    }
    const { document } = globalThis as unknown as { document: { activeElement: Focusable } }
    const outer = document.activeElement
    const element = outer.shadowRoot?.activeElement ?? outer
    const name = element.getAttribute('aria-label') ?? element.textContent?.trim() ?? ''
    return `${element.tagName.toLowerCase()} ${name}`
  })
}

t.test('<shell-frame> in Chromium', { skip }, async (t) => {
  if ('skip' in chromium) return
  const logs = createLogCapture()
  const pages = await startClientPages(t, chromium.path, { logs })
  const { service } = pages
  const { sql } = service.db
  // A nested item below contacts, in English and German.
  await sql.begin(async (sql) => {
    const [contacts] = await sql<{ id: string }[]>`
      select id from shell.menu_items where app_key = 'crm' and item_key = 'contacts'`
    const [vip] = await sql<{ id: string }[]>`
      insert into shell.menu_items (app_key, item_key, zone, parent_id, label, href)
      values ('crm', 'contacts.vip', 'sidebar', ${contacts?.id ?? null}, 'VIP contacts', '/crm/contacts/vip')
      returning id`
    await sql`
      insert into shell.menu_item_labels (menu_item_id, locale, label)
      values (${vip?.id ?? null}, 'de', 'VIP-Kontakte')`
  })
  const token = await service.token({ sub: 'user-1', roles: ['crm-sales'] })
  pages.setTokens('frame', async () => token)
  const fetchShell = async () =>
    (
      await httpRequest(
        service.url,
        '/api/v1/shell/crm',
        bearer(token, { 'accept-language': 'de, en' }),
      )
    ).json<Shell>()
  // The insert reaches the snapshot by a reload: wait for it, as the frame will.
  let shell = await fetchShell()
  await waitFor(async () => {
    shell = await fetchShell()
    return JSON.stringify(shell.menus.sidebar).includes('contacts.vip')
  }, 'the nested item in the API')

  const page = (await pages.open(PAGE)).page
  const drawn = await waitForFrame(page, (frame) => frame.product !== null, 'the frame drawn')

  await t.test('zones and items as the API sends them, nested', async (t) => {
    for (const zone of ZONES) {
      const drawnZone = drawn.zones[zone]
      t.match(drawnZone, { tag: 'nav', part: `zone ${zone}`, label: ZONE_LABELS[zone] }, zone)
      t.same(drawnZone.items, expectedItems(shell.menus[zone]), `${zone}: the API's items`)
    }
    t.same(
      drawn.zones.sidebar.items.find((item) => item.id === 'contacts')?.children,
      [{ id: 'contacts.vip', part: 'item', label: 'VIP-Kontakte', children: [] }],
      'a child inside its parent’s item',
    )
    t.equal(drawn.product, 'Acme CRM')
    t.equal(drawn.user, 'user-1', 'no name in the token: the user menu names the sub')
    t.equal(drawn.footerText, 'Acme CRM · internal use only')
    t.same(pages.tokenCalls.get('frame')?.[0], { renew: false }, 'a getToken set before define')
  })

  await t.test('links, the current page, the search form', async (t) => {
    const frame = page.locator('shell-frame')
    const contacts = frame.locator('[data-item-id="contacts"] > a')
    t.equal(await contacts.getAttribute('href'), '/crm/contacts', 'the href as the API sends it')
    t.equal(
      await contacts.evaluate((link) => (link as unknown as { href: string }).href),
      `${pages.origin}/crm/contacts`,
      'resolved against the page',
    )
    t.equal(await contacts.getAttribute('aria-current'), 'page', 'the page’s own item')
    t.equal(await frame.locator('[aria-current]').count(), 1, 'and no other')
    const docs = frame.locator('[data-item-id="docs"] > a')
    t.equal(await docs.getAttribute('href'), 'https://docs.example.com/crm')
    t.equal(await docs.getAttribute('target'), '_blank', 'external: a new tab')
    t.equal(await docs.getAttribute('rel'), 'noopener noreferrer')
    const search = frame.locator('[data-item-id="search"] form')
    t.equal(await search.getAttribute('method'), 'get')
    t.equal(await search.getAttribute('action'), `${pages.origin}/crm/search`)
    t.equal(await search.locator('input[type="search"]').getAttribute('name'), 'q')
  })

  await t.test('brand colours as custom properties on the element', async (t) => {
    const frame = page.locator('shell-frame')
    const styles = await frame.evaluate((element) => {
      const host = element as unknown as {
        style: { getPropertyValue(name: string): string }
        shadowRoot: { querySelector(selector: string): unknown }
        ownerDocument: {
          defaultView: { getComputedStyle(element: unknown): Record<string, string> }
        }
      }
      const view = host.ownerDocument.defaultView
      return {
        primary: host.style.getPropertyValue('--shell-primary-color'),
        accent: host.style.getPropertyValue('--shell-accent-color'),
        header: view.getComputedStyle(host.shadowRoot.querySelector('header')).backgroundColor,
        sidebar: view.getComputedStyle(host.shadowRoot.querySelector('[data-zone=sidebar]'))
          .borderInlineEndColor,
      }
    })
    t.same(styles, {
      primary: shell.branding.primaryColor,
      accent: shell.branding.accentColor,
      header: 'rgb(11, 95, 255)',
      sidebar: 'rgb(0, 163, 122)',
    })
  })

  await t.test('landmarks, labels, keyboard', async (t) => {
    t.equal(await page.getByRole('banner').count(), 1, 'a banner: the top bar')
    for (const name of ['Top bar', 'Side bar', 'Footer']) {
      t.equal(await page.getByRole('navigation', { name }).count(), 1, `navigation "${name}"`)
    }
    t.equal(await page.getByRole('contentinfo').count(), 1, 'content info: the footer')
    t.equal(await page.getByRole('search').count(), 1, 'a search landmark')
    t.equal(await page.getByRole('searchbox', { name: 'Kunden suchen' }).count(), 1)
    t.equal(await page.getByRole('main').count(), 1, 'the page’s own main, in the slot')
    t.equal(
      await page.getByRole('link', { name: 'Kontakte', exact: true }).getAttribute('aria-current'),
      'page',
    )
    t.equal(
      await page.getByRole('link', { name: /Dokumentation.*new tab/ }).count(),
      1,
      'a new tab is said',
    )
    t.comment(await page.locator('body').ariaSnapshot())

    await page.locator('body').focus()
    const order: string[] = []
    for (let press = 0; press < 12; press += 1) {
      await page.keyboard.press('Tab')
      order.push(await describeFocus(page))
    }
    t.same(
      order.slice(0, 11),
      [
        'a Acme CRM',
        'input Kunden suchen',
        'summary user-1',
        'a Übersicht',
        'a Kontakte',
        'a VIP-Kontakte',
        'a Firmen',
        'a Interessenten',
        'a Verkaufschancen',
        'a Aktivitäten',
        'a Dokumentation (opens in a new tab)',
      ],
      'every control, in reading order, by Tab',
    )
    await page.getByText('user-1').focus()
    await page.keyboard.press('Enter')
    t.equal(
      await page.getByRole('navigation', { name: 'User menu' }).count(),
      1,
      'Enter opens the user menu',
    )
    await page.keyboard.press('Tab')
    t.equal(await describeFocus(page), 'a Meine Einstellungen')
  })

  await t.test('an action: a shell-action event, cancelable', async (t) => {
    const signOut = page.getByRole('button', { name: 'Abmelden' })
    await page.evaluate(() => {
      Object.assign(globalThis, { cancelActions: true })
    })
    await signOut.click()
    const actions = await page.evaluate(
      () => (globalThis as unknown as { actions: unknown[] }).actions,
    )
    t.same(actions, [
      { id: 'logout', target: 'shell-frame', bubbles: true, composed: true, cancelable: true },
    ])
    t.equal(new URL(page.url()).pathname, '/crm/contacts', 'cancelled: the page stays')
  })

  await t.test('a live relabel', async (t) => {
    await sql`
      update shell.menu_item_labels set label = 'Kundschaft'
      where locale = 'de'
        and menu_item_id = (select id from shell.menu_items where app_key = 'crm' and item_key = 'contacts')`
    const relabelled = await waitForFrame(
      page,
      (frame) => frame.zones.sidebar.items[1]?.label === 'Kundschaft',
      'the new label',
    )
    t.same(
      relabelled.zones.sidebar.items[1]?.children.map((item) => item.id),
      ['contacts.vip'],
    )
    t.equal(
      await page.getByRole('link', { name: 'Kundschaft' }).getAttribute('aria-current'),
      'page',
      'still the current page',
    )
  })

  await t.test(
    'an action not cancelled goes to its href; search goes to its href with q',
    async (t) => {
      await page.evaluate(() => {
        Object.assign(globalThis, { cancelActions: false })
      })
      // The user menu is open still from the cancelled action.
      const signOut = page.getByRole('button', { name: 'Abmelden' })
      if (!(await signOut.isVisible())) await page.getByText('user-1').click()
      await Promise.all([page.waitForURL(/\/logout$/), signOut.click()])
      t.equal(new URL(page.url()).pathname, '/logout')

      const searching = (await pages.open(PAGE)).page
      const box = searching.getByRole('searchbox', { name: 'Kunden suchen' })
      await box.fill('Ada Lovelace')
      await Promise.all([searching.waitForURL(/\/crm\/search\?/), box.press('Enter')])
      const url = new URL(searching.url())
      t.equal(url.pathname, '/crm/search')
      t.equal(url.searchParams.get('q'), 'Ada Lovelace')
      await searching.close()
    },
  )

  await t.test('live="false": no event stream', async (t) => {
    const still = await pages.open('crm?app=crm&live=false')
    await waitForFrame(still.page, (frame) => frame.product !== null, 'the frame')
    t.equal(still.requests.filter((request) => request.url.endsWith('/events')).length, 0)
    t.same(await still.problems(), [])
    await still.page.close()
  })

  await t.test('sub: the stored frame drawn before getToken answers', async (t) => {
    let releaseToken = () => {}
    const tokenGate = new Promise<void>((release) => {
      releaseToken = release
    })
    pages.setTokens('frame', async () => {
      await tokenGate
      return token
    })
    const early = await pages.open(`${PAGE}&sub=user-1`)
    const frame = await waitForFrame(early.page, (frame) => frame.product !== null, 'the frame')
    t.equal(early.requests.length, 0, 'before any request: getToken has not answered')
    t.same(
      frame.zones.sidebar.items.map((item) => item.id),
      shell.menus.sidebar.map((item) => item.id),
      'the stored frame',
    )
    releaseToken()
    await waitFor(
      () => early.requests.some((request) => request.status === 200),
      'the revalidation',
    )
    await early.page.close()
    pages.setTokens('frame', async () => token)
  })

  await t.test('base-url: where the element’s client goes', async (t) => {
    const elsewhere = await pages.open(
      `crm?app=crm&base-url=${encodeURIComponent('http://127.0.0.1:9/prefix')}`,
    )
    await waitFor(
      () => elsewhere.requests.some((request) => request.status === -1),
      'a request that fails',
    )
    t.ok(
      elsewhere.requests.every((request) =>
        request.url.startsWith('http://127.0.0.1:9/prefix/api/v1/shell/crm'),
      ),
      'every request goes to base-url, its path prefix kept',
    )
    t.same(await elsewhere.problems(), [], 'an unreachable service is no script error')
    await elsewhere.page.close()
  })

  await t.test('storage="none": nothing kept', async (t) => {
    const cleared = await pages.open('crm?app=crm&live=false&storage=none')
    await cleared.page.evaluate(() => {
      ;(globalThis as unknown as { localStorage: { clear(): void } }).localStorage.clear()
    })
    await cleared.page.reload()
    await waitFor(
      () => cleared.requests.some((request) => request.status === 200),
      'the frame’s shell from the network',
    )
    await waitForFrame(cleared.page, (frame) => frame.product !== null, 'the frame')
    t.same(await cleared.storage(), {}, 'no entry written')
    await cleared.page.close()
  })

  await t.test(
    'label-* attributes: the element’s names, in the page’s language; the shell’s texts in its own',
    async (t) => {
      const labels = {
        'label-topbar': 'Hauptleiste',
        'label-sidebar': 'Seitenleiste',
        'label-user-menu': 'Benutzermenü',
        'label-footer': 'Fußzeile',
        'label-new-tab': 'öffnet in neuem Tab',
      }
      const query = new URLSearchParams({ app: 'crm', locales: 'fr', 'page-lang': 'de', ...labels })
      const german = (await pages.open(`crm/contacts?${query}`)).page
      await waitForFrame(german, (frame) => frame.product !== null, 'the frame')
      for (const name of ['Hauptleiste', 'Seitenleiste', 'Fußzeile']) {
        t.equal(await german.getByRole('navigation', { name }).count(), 1, `navigation "${name}"`)
      }
      t.equal(
        await german.getByRole('link', { name: 'Documentation (öffnet in neuem Tab)' }).count(),
        1,
        'the new tab said in the page’s words',
      )
      await german.getByText('user-1').click()
      t.equal(await german.getByRole('navigation', { name: 'Benutzermenü' }).count(), 1)
      // The language a screen reader reads each in: the nearest lang, across the shadow root.
      const languages = await german.evaluate(() => {
        interface Node {
          parentNode: Node | null
          host?: Node
          getAttribute?(name: string): string | null
        }
        const languageOf = (start: Node | null) => {
          for (let node = start; node !== null; node = node.parentNode ?? node.host ?? null) {
            const lang = node.getAttribute?.('lang')
            if (lang !== null && lang !== undefined) return lang
          }
          return null
        }
        const { document } = globalThis as unknown as {
          document: {
            querySelector(selector: string): {
              shadowRoot: Node & { querySelector(s: string): Node }
            }
          }
        }
        const root = document.querySelector('shell-frame').shadowRoot
        const at = (selector: string) => languageOf(root.querySelector(selector))
        return {
          zones: ['topbar', 'sidebar', 'user-menu', 'footer'].map((zone) =>
            languageOf(root.querySelector(`[data-zone=${zone}]`)),
          ),
          item: at('[data-item-id=contacts] > a'),
          search: at('[data-item-id=search] input'),
          note: at('.new-tab'),
          product: at('[part~=product-name]'),
          footer: at('[part~=footer-text]'),
        }
      })
      t.same(
        languages,
        {
          zones: ['de', 'de', 'de', 'de'],
          item: 'fr',
          search: 'fr',
          note: 'de',
          product: 'fr',
          footer: 'fr',
        },
        'the names in German, the page’s; the items and texts in French, the shell’s',
      )
      const english = (await pages.open('crm/contacts?app=crm&locales=fr&page-lang=de')).page
      await waitForFrame(english, (frame) => frame.product !== null, 'the frame')
      t.equal(
        await english.evaluate(
          () =>
            (
              globalThis as unknown as {
                document: {
                  querySelector(selector: string): {
                    shadowRoot: { querySelector(selector: string): { lang: string } }
                  }
                }
              }
            ).document
              .querySelector('shell-frame')
              .shadowRoot.querySelector('[data-zone=sidebar]').lang,
        ),
        'en',
        'without the attributes: English, and said to be',
      )
      await german.close()
      await english.close()
    },
  )

  for (const withNavigationApi of [true, false]) {
    await t.test(
      `pushState and replaceState move aria-current (${withNavigationApi ? 'the Navigation API' : 'no Navigation API: the History API wrapped'})`,
      async (t) => {
        const moving = await pages.open(PAGE, {
          // An older browser: the element finds no Navigation API.
          ...(withNavigationApi
            ? {}
            : { initScript: 'Object.defineProperty(window, "navigation", { value: undefined })' }),
        })
        const current = () =>
          moving.page
            .locator('shell-frame [aria-current=page]')
            .evaluateAll((links) =>
              links.map((link) =>
                (link as unknown as { getAttribute(name: string): string }).getAttribute('href'),
              ),
            )
        await waitFor(async () => (await current()).length === 1, 'the frame drawn')
        t.same(await current(), ['/crm/contacts'])
        await moving.page.evaluate(() =>
          (
            globalThis as unknown as {
              history: { pushState(state: unknown, unused: string, url: string): void }
            }
          ).history.pushState({}, '', '/crm/accounts'),
        )
        t.same(await current(), ['/crm/accounts'], 'pushState: the new page’s item')
        await moving.page.evaluate(() =>
          (
            globalThis as unknown as {
              history: { replaceState(state: unknown, unused: string, url: string): void }
            }
          ).history.replaceState({}, '', '/crm/leads'),
        )
        t.same(await current(), ['/crm/leads'], 'replaceState: the new page’s item')
        await moving.page.goBack()
        await waitFor(async () => (await current())[0] === '/crm/contacts', 'back, by popstate')
        t.pass('and back')
        t.same(await moving.problems(), [])
        await moving.page.close()
      },
    )
  }

  await t.test('a zone without items draws no landmark', async (t) => {
    const emptied = (await pages.open(PAGE)).page
    await waitForFrame(emptied, (frame) => frame.product !== null, 'the frame')
    t.equal(await emptied.getByRole('navigation', { name: 'Footer' }).count(), 1)
    await sql`delete from shell.menu_items where app_key = 'crm' and zone = 'footer'`
    await waitForFrame(emptied, (frame) => frame.zones.footer.items.length === 0, 'no footer item')
    t.equal(
      await emptied.getByRole('navigation', { name: 'Footer' }).count(),
      0,
      'no empty navigation',
    )
    t.equal(await emptied.getByRole('contentinfo').count(), 1, 'the footer’s text still shown')
    await sql`update shell.branding set footer_text = null where app_key = 'crm'`
    await waitFor(
      async () => (await emptied.getByRole('contentinfo').count()) === 0,
      'no footer at all: no text, no item',
    )
    t.pass('nothing in the footer: no content info either')
    t.equal(
      await emptied.getByRole('navigation', { name: 'Side bar' }).count(),
      1,
      'the rest stays',
    )
    await emptied.close()
  })

  t.same(logs.leaks(), [])
})
