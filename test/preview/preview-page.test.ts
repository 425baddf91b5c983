import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { rolloutBucket } from '../../src/snapshot/audience.js'
import { findChromium, launchChromium } from '../helpers/browser.js'
import { createLogCapture, createSeededDatabase, startTestService } from '../helpers/service.js'
import { PACKAGE_ROOT, spawnService } from '../helpers/service-process.js'
import { waitFor } from '../helpers/wait.js'

/**
 * The preview page in a real Chromium, used as a developer would: the
 * service started in local mode as `npm start` starts it, the page opened at
 * the address its start log names, the pickers clicked, and the database
 * changed by SQL while the page stays open.
 */

/**
 * Where the screenshot goes: a temp file, so a test run leaves the clone as it
 * was; `PREVIEW_SCREENSHOT=docs/preview.png` renews the one docs/frame.md shows.
 */
const SCREENSHOT = resolve(
  PACKAGE_ROOT,
  process.env.PREVIEW_SCREENSHOT ?? join(tmpdir(), `shell-data-preview-${process.pid}.png`),
)

const chromium = await findChromium()
const skip = 'skip' in chromium ? chromium.skip : false

/** A side-bar entry as drawn: its label and, nested below it, its children. */
interface DrawnItem {
  label: string
  children: DrawnItem[]
}

/** The frame as the page shows it, read through its landmarks. */
interface DrawnFrame {
  lang: string
  product: string
  search: string | null
  user: string
  /** The caller block below the app's name: each term with its value ("User id": the sub). */
  caller: Record<string, string>
  userMenu: string[]
  sidebar: DrawnItem[]
  footerText: string
  footer: { label: string; external: boolean }[]
}

/**
 * What the reader below uses of the page's DOM: this is Node code, compiled
 * without the DOM's types, and the reader runs in the page.
 */
interface PageElement {
  readonly textContent: string | null
  readonly firstChild: PageElement | null
  readonly firstElementChild: PageElement | null
  readonly nextElementSibling: PageElement | null
  readonly children: ArrayLike<PageElement>
  readonly lang: string
  readonly target: string
  readonly placeholder: string
  readonly shadowRoot: PageElement | null
  querySelector(selector: string): PageElement | null
  querySelectorAll(selector: string): ArrayLike<PageElement>
}

/** The frame as `<shell-frame>` draws it in its shadow root, and the page's caller block in it. */
function readFrame(page: Page): Promise<DrawnFrame> {
  return page.locator('#frame').evaluate((frame: PageElement): DrawnFrame => {
    const root = frame.shadowRoot as PageElement
    const text = (element: PageElement | null) => (element?.textContent ?? '').trim()
    const readList = (list: PageElement | null): DrawnItem[] =>
      Array.from(list?.children ?? [], (entry) => ({
        label: text(entry.firstElementChild),
        children: readList(entry.querySelector(':scope > ul')),
      }))
    return {
      // The shell's language is on its texts; the frame's own names are in the page's.
      lang: root.querySelector('[part~=product-name]')?.lang ?? '',
      product: text(root.querySelector('header [part~=product-name]')),
      search: root.querySelector('header [role=search] input')?.placeholder ?? null,
      user: text(root.querySelector('header details summary')),
      caller: Object.fromEntries(
        Array.from(frame.querySelectorAll('main dl.caller > dt'), (term) => [
          text(term),
          text(term.nextElementSibling),
        ]),
      ),
      userMenu: Array.from(root.querySelectorAll('header details li > *'), text),
      sidebar: readList(root.querySelector('nav[aria-label="Side bar"] > ul')),
      footerText: text(root.querySelector('footer [part~=footer-text]')),
      footer: Array.from(root.querySelectorAll('footer a'), (link) => ({
        label: text(link.firstChild),
        external: link.target === '_blank',
      })),
    }
  })
}

/** Waits until the drawn frame satisfies `ready` (the page redraws on its own), and returns it. */
async function waitForFrame(
  page: Page,
  ready: (frame: DrawnFrame) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<DrawnFrame> {
  let frame = await readFrame(page)
  await waitFor(
    async () => {
      frame = await readFrame(page)
      return ready(frame)
    },
    () => `${what}; the page shows ${JSON.stringify(frame)}`,
    timeoutMs,
  )
  return frame
}

/** The status line says the event stream is open (so the screenshot shows the same words each time). */
async function waitForLive(page: Page): Promise<void> {
  await page.getByRole('status').getByText(/^Live/).waitFor({ timeout: 10_000 })
}

const labelsOf = (items: DrawnItem[]) => items.map((item) => item.label)

/** The first of `user-1`, `user-2`, … whose bucket for crm's `activities` is (or is not) below `percent`. */
function findUserId(inRollout: boolean, percent: number): string {
  for (let n = 1; ; n += 1) {
    const sub = `user-${n}`
    if (rolloutBucket('crm', 'activities', sub) < percent === inRollout) return sub
  }
}

t.test('the preview page, open in Chromium, as a developer uses it', { skip }, async (t) => {
  if ('skip' in chromium) return
  const db = await createSeededDatabase(t)
  const service = spawnService(t, {
    PORT: String(await findFreePort()),
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
  })
  const ready = await service.waitForLine(
    (line) => typeof line.preview === 'string',
    'the start line naming the preview page',
    45_000,
  )
  const previewUrl = String(ready.preview)
  t.comment(`the start log names the preview page: ${previewUrl}`)

  const browser = await launchChromium(t, chromium.path)
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => problems.push(error.message))
  const requested: string[] = []
  page.on('request', (request) => requested.push(request.url()))
  let navigations = 0
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigations += 1
  })
  const opened = await page.goto(previewUrl)
  t.equal(opened?.status(), 200, 'GET / answers the page')

  await t.test('the seeds’ crm frame for a user with no role', async (t) => {
    const frame = await waitForFrame(page, (frame) => frame.sidebar.length > 0, 'the first frame')
    t.equal(await page.getByLabel('App').inputValue(), 'crm', 'the first app is chosen')
    t.same(
      await page
        .getByRole('group', { name: 'Roles' })
        .getByRole('checkbox')
        .evaluateAll((boxes) => boxes.map((box) => box.value)),
      ['crm-admin', 'crm-manager', 'crm-sales'],
      'the roles granted in crm are offered',
    )
    t.same(
      await page
        .getByLabel('Language')
        .locator('option')
        .evaluateAll((options) => options.map((option) => option.value)),
      ['de', 'en', 'fr'],
      'its languages are offered',
    )
    t.equal(await page.getByLabel('Language').inputValue(), 'en', 'its default language chosen')
    t.equal(frame.product, 'Acme CRM', 'the branding’s product name')
    t.equal(
      await page
        .getByRole('banner')
        .evaluate(
          (banner) => banner.ownerDocument.defaultView.getComputedStyle(banner).backgroundColor,
        ),
      'rgb(11, 95, 255)',
      'the top bar in the primary colour #0b5fff',
    )
    t.equal(frame.search, 'Search customers', 'the top bar’s search field')
    t.equal(frame.user, 'Preview User', 'the user menu names the user')
    t.same(frame.userMenu, ['My settings', 'Help & support', 'Sign out'])
    t.same(labelsOf(frame.sidebar), ['Dashboard', 'Contacts', 'Accounts', 'Activities'])
    t.equal(frame.footerText, 'Acme CRM · internal use only')
    t.same(frame.footer, [{ label: 'Documentation', external: true }], 'the external footer link')
    t.comment(`no role: ${labelsOf(frame.sidebar).join(', ')}`)
  })

  await t.test('the same frame for crm-sales and crm-admin', async (t) => {
    await page.getByRole('checkbox', { name: 'crm-sales' }).check()
    await page.getByRole('checkbox', { name: 'crm-admin' }).check()
    const frame = await waitForFrame(
      page,
      (frame) => frame.sidebar.length === 8,
      'the items of crm-sales and crm-admin',
    )
    t.same(labelsOf(frame.sidebar), [
      'Dashboard',
      'Contacts',
      'Accounts',
      'Leads',
      'Opportunities',
      'Activities',
      'Reports',
      'Administration',
    ])
    t.comment(`crm-sales + crm-admin: ${labelsOf(frame.sidebar).join(', ')}`)

    await waitForLive(page)
    const userMenu = page.getByRole('banner').getByText('Preview User')
    await userMenu.click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    await mkdir(dirname(SCREENSHOT), { recursive: true })
    await page.screenshot({ path: SCREENSHOT })
    await userMenu.click()
    t.comment(`screenshot: ${SCREENSHOT}`)
  })

  await t.test('in de', async (t) => {
    await page.getByLabel('Language').selectOption('de')
    const frame = await waitForFrame(page, (frame) => frame.lang === 'de', 'the German frame')
    t.same(labelsOf(frame.sidebar), [
      'Übersicht',
      'Kontakte',
      'Firmen',
      'Interessenten',
      'Verkaufschancen',
      'Aktivitäten',
      'Berichte',
      'Verwaltung',
    ])
    t.equal(frame.search, 'Kunden suchen')
    t.same(frame.userMenu, ['Meine Einstellungen', 'Hilfe & Support', 'Abmelden'])
    t.same(frame.footer, [{ label: 'Dokumentation', external: true }])
    t.comment(`de: ${labelsOf(frame.sidebar).join(', ')}`)
  })

  await t.test('a change committed by SQL shows on the open page, with no reload', async (t) => {
    await page.evaluate(() => {
      Object.assign(globalThis, { stillTheSamePage: true })
    })
    const navigationsBefore = navigations
    const changedAt = Date.now()
    await db.sql`
      update shell.menu_item_labels set label = 'Kundenkontakte'
      where locale = 'de'
        and menu_item_id = (select id from shell.menu_items where app_key = 'crm' and item_key = 'contacts')`
    const relabelled = await waitForFrame(
      page,
      (frame) => frame.sidebar[1]?.label === 'Kundenkontakte',
      'the new label',
    )
    const shownAfterMs = Date.now() - changedAt
    t.equal(relabelled.sidebar[1]?.label, 'Kundenkontakte', 'the label changed by SQL')
    t.comment(`the label changed by SQL showed on the open page after ${shownAfterMs} ms`)

    await db.sql.begin(async (sql) => {
      const [reports] = await sql<{ id: string }[]>`
        select id from shell.menu_items where app_key = 'crm' and item_key = 'reports'`
      const [child] = await sql<{ id: string }[]>`
        insert into shell.menu_items (app_key, item_key, zone, parent_id, label, href)
        values ('crm', 'reports.pipeline', 'sidebar', ${reports?.id ?? null}, 'Pipeline', '/crm/reports/pipeline')
        returning id`
      await sql`
        insert into shell.menu_item_labels (menu_item_id, locale, label)
        values (${child?.id ?? null}, 'de', 'Vertriebstrichter')`
    })
    const nested = await waitForFrame(
      page,
      (frame) => frame.sidebar[6]?.children.length === 1,
      'the nested item',
    )
    t.same(
      nested.sidebar[6],
      { label: 'Berichte', children: [{ label: 'Vertriebstrichter', children: [] }] },
      'an item added below another is drawn nested under it',
    )

    t.equal(navigations, navigationsBefore, 'the page was not navigated')
    t.equal(
      await page.evaluate(() => 'stillTheSamePage' in globalThis),
      true,
      'the same document, never reloaded',
    )
    t.match(await page.getByRole('status').textContent(), /^Live/, 'the page says it is live')
  })

  await t.test('a rollout, as a user inside it and a user outside it see it', async (t) => {
    const activities = 'Aktivitäten'
    const inside = findUserId(true, 50)
    const outside = findUserId(false, 50)
    const defaultInside = rolloutBucket('crm', 'activities', 'preview-user') < 50
    t.comment(
      `rollout 50%: ${inside} is in, ${outside} is out, preview-user is ${defaultInside ? 'in' : 'out'}`,
    )
    const userIdField = page.getByLabel('User id')
    t.equal(await userIdField.inputValue(), 'preview-user', 'the field starts at the default user')
    const shownTo = (frame: DrawnFrame, sub: string) => frame.caller['User id'] === sub
    const showsActivities = (frame: DrawnFrame) => labelsOf(frame.sidebar).includes(activities)

    await db.sql`
      update shell.menu_items set rollout_percent = 50
      where app_key = 'crm' and item_key = 'activities'`
    // The open stream brings the change to the default user's frame, in or out.
    await waitForFrame(
      page,
      (frame) => shownTo(frame, 'preview-user') && showsActivities(frame) === defaultInside,
      'the rollout, as preview-user sees it',
    )

    await userIdField.fill(outside)
    await userIdField.press('Enter')
    const out = await waitForFrame(
      page,
      (frame) => shownTo(frame, outside) && !showsActivities(frame),
      `the frame of ${outside}`,
    )
    t.same(
      labelsOf(out.sidebar),
      [
        'Übersicht',
        'Kundenkontakte',
        'Firmen',
        'Interessenten',
        'Verkaufschancen',
        'Berichte',
        'Verwaltung',
      ],
      `${outside}, outside the rollout, does not see Activities`,
    )
    t.equal(out.user, 'Preview User', 'the user menu still names the preview user')
    t.equal(out.caller.Roles, 'crm-admin, crm-sales', 'the roles picked stay')

    await userIdField.fill(`  ${inside}  `)
    await userIdField.press('Enter')
    const into = await waitForFrame(
      page,
      (frame) => shownTo(frame, inside),
      `the frame of ${inside}`,
    )
    t.equal(await userIdField.inputValue(), inside, 'the user id is trimmed')
    t.same(
      labelsOf(into.sidebar),
      [
        'Übersicht',
        'Kundenkontakte',
        'Firmen',
        'Interessenten',
        'Verkaufschancen',
        activities,
        'Berichte',
        'Verwaltung',
      ],
      `${inside}, inside the rollout, sees Activities`,
    )

    // A pasted tab, which the token endpoint would refuse: the page keeps the user it shows.
    await userIdField.fill(`${inside}\tx`)
    await userIdField.press('Enter')
    await page
      .getByRole('status')
      .getByText(/control characters/)
      .waitFor({ timeout: 10_000 })
    t.equal(await userIdField.inputValue(), inside, 'a user id with a control character is undone')

    // Only a stream opened as the user shown sends this change: the frame of preview-user
    // or of the outside user stays as it was at 0%, so their streams send no event.
    await db.sql`
      update shell.menu_items set rollout_percent = 0
      where app_key = 'crm' and item_key = 'activities'`
    await waitForFrame(
      page,
      (frame) => shownTo(frame, inside) && !showsActivities(frame),
      `Activities gone for ${inside} when the rollout drops to 0`,
    )
    t.pass(`the event stream was reopened as ${inside}`)

    await userIdField.fill('')
    await userIdField.press('Enter')
    await waitForFrame(page, (frame) => shownTo(frame, 'preview-user'), 'the default user again')
    t.pass('an empty field means preview-user')

    await db.sql`
      update shell.menu_items set rollout_percent = null
      where app_key = 'crm' and item_key = 'activities'`
    await waitForFrame(page, showsActivities, 'Activities for everyone again')
  })

  t.same(problems, [], 'no script error on the page')
  t.notOk(
    requested.some((url) => /token|eyJ/.test(new URL(url).search)),
    'no token in any URL the page requested',
  )
  t.ok(
    requested.some((url) => url.endsWith('/api/v1/shell/crm/events')),
    'the page follows the event stream',
  )
})

t.test('outside local mode, / is 404 in the browser too', { skip }, async (t) => {
  if ('skip' in chromium) return
  const { url } = await startTestService(t, { logs: createLogCapture() })
  const browser = await launchChromium(t, chromium.path)
  const page = await browser.newPage()
  const response = await page.goto(`${url}/`)
  t.equal(response?.status(), 404)
  t.match(response?.headers()['content-type'], /^application\/problem\+json/)
  t.match(JSON.parse((await response?.text()) ?? '{}'), { status: 404, title: 'Not found' })
})
