import t from 'tap'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { expectProblem } from '../helpers/problem.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** The shell in the caller's language, through real HTTP, on the seeds (en, de, fr). */

const logs = createLogCapture()
const { url, token, db } = await startTestService(t, { logs })
const SHELL = '/api/v1/shell/crm'
const sales = await token({ sub: 'sam', roles: ['crm-sales'] })

async function getShell(headers: Record<string, string>, caller = sales) {
  const response = await httpRequest(url, SHELL, bearer(caller, headers))
  const body = response.status === 200 ? response.json<ShellBody>() : undefined
  return { response, body }
}

interface ShellBody {
  locale: string
  menus: Record<string, { id: string; label: string }[]>
}

function sidebarLabels(body: ShellBody | undefined): string[] {
  return (body?.menus.sidebar ?? []).map((item) => item.label)
}

t.test('a Swiss German browser gets German labels, Content-Language and Vary', async (t) => {
  const { response, body } = await getShell({ 'accept-language': 'de-CH,de;q=0.9,en;q=0.8' })
  t.equal(response.status, 200)
  t.equal(body?.locale, 'de')
  t.equal(response.headers['content-language'], 'de')
  t.equal(response.headers.vary, 'Authorization, Accept-Language, Accept-Encoding')
  t.same(sidebarLabels(body), [
    'Übersicht',
    'Kontakte',
    'Firmen',
    'Interessenten',
    'Verkaufschancen',
    'Aktivitäten',
  ])
  t.equal(body?.menus['user-menu']?.at(-1)?.label, 'Abmelden')
})

t.test('each language its own labels; no header, *, or junk: English', async (t) => {
  const cases: [Record<string, string>, string, string][] = [
    [{}, 'en', 'Contacts'],
    [{ 'accept-language': 'fr-CA,fr;q=0.9' }, 'fr', 'Contacts'],
    [{ 'accept-language': 'it, fr;q=0.5' }, 'fr', 'Contacts'],
    [{ 'accept-language': '*' }, 'en', 'Contacts'],
    [{ 'accept-language': 'de;q=0, fr;q=0.1' }, 'fr', 'Contacts'],
    [{ 'accept-language': `de, ${'%'.repeat(6000)}` }, 'en', 'Contacts'],
    [{ 'accept-language': 'de;q=2' }, 'en', 'Contacts'],
  ]
  for (const [headers, locale, contacts] of cases) {
    const { response, body } = await getShell(headers)
    const what = JSON.stringify(headers).slice(0, 60)
    t.equal(response.status, 200, what)
    t.equal(body?.locale, locale, what)
    t.equal(response.headers['content-language'], locale)
    t.equal(body?.menus.sidebar?.[1]?.label, contacts)
  }
  const french = await getShell({ 'accept-language': 'fr' })
  t.equal(french.body?.menus.sidebar?.[3]?.label, 'Prospects')
  t.equal(french.body?.menus.topbar?.[0]?.label, 'Rechercher des clients')
})

t.test('roles filter the menus the same way in every language', async (t) => {
  const viewer = await token({ sub: 'vic' })
  for (const language of ['en', 'de', 'fr']) {
    const { body } = await getShell({ 'accept-language': language }, viewer)
    t.equal(sidebarLabels(body).length, 4, `${language}: leads and opportunities hidden`)
  }
})

t.test('If-None-Match is matched against the tag of the chosen language', async (t) => {
  const german = await getShell({ 'accept-language': 'de' })
  const french = await getShell({ 'accept-language': 'fr' })
  const germanTag = String(german.response.headers.etag)
  t.not(germanTag, french.response.headers.etag, 'another language, other bytes, another tag')
  const swiss = await getShell({ 'accept-language': 'de-CH' })
  t.equal(swiss.response.headers.etag, germanTag, 'de-CH chooses de: the same bytes and tag')

  const revalidated = await getShell({ 'accept-language': 'de-AT', 'if-none-match': germanTag })
  t.equal(revalidated.response.status, 304)
  t.equal(revalidated.response.body.length, 0)
  t.equal(revalidated.response.headers.etag, germanTag)
  t.equal(revalidated.response.headers['content-language'], 'de')
  t.equal(revalidated.response.headers.vary, 'Authorization, Accept-Language, Accept-Encoding')
  t.equal(revalidated.response.headers['cache-control'], 'private, no-cache')

  const switched = await getShell({ 'accept-language': 'fr', 'if-none-match': germanTag })
  t.equal(switched.response.status, 200, 'a language switch is a new body')
  t.equal(switched.response.headers.etag, french.response.headers.etag)

  const anonymous = await httpRequest(url, SHELL, {
    headers: { 'accept-language': 'de', 'if-none-match': germanTag },
  })
  expectProblem(t, anonymous, 401)
})

t.test('a label changed by SQL in one language changes only that language', async (t) => {
  const tags = async () =>
    Object.fromEntries(
      await Promise.all(
        ['en', 'de', 'fr'].map(async (language) => [
          language,
          String((await getShell({ 'accept-language': language })).response.headers.etag),
        ]),
      ),
    )
  const before = await tags()
  await db.sql`
    update shell.menu_item_labels set label = 'Kontaktpersonen'
    where locale = 'de' and menu_item_id = (select id from shell.menu_items where item_key = 'contacts')`
  let after = before
  await waitFor(async () => {
    after = await tags()
    return after.de !== before.de
  }, 'the German tag to change')
  t.equal(after.en, before.en, 'English unchanged')
  t.equal(after.fr, before.fr, 'French unchanged')
  const { body } = await getShell({ 'accept-language': 'de' })
  t.equal(body?.menus.sidebar?.[1]?.label, 'Kontaktpersonen')
})

t.test(
  'a label in a new language, inserted by SQL, reaches the API through the feed',
  async (t) => {
    await db.sql`
    insert into shell.menu_item_labels (menu_item_id, locale, label)
    select id, 'it', 'Contatti' from shell.menu_items where item_key = 'contacts'`
    let italian = await getShell({ 'accept-language': 'it-IT,it;q=0.9' })
    await waitFor(async () => {
      italian = await getShell({ 'accept-language': 'it-IT,it;q=0.9' })
      return italian.body?.locale === 'it'
    }, 'Italian to be offered')
    t.equal(italian.response.headers['content-language'], 'it')
    t.equal(italian.body?.menus.sidebar?.[1]?.label, 'Contatti')
    t.equal(
      italian.body?.menus.sidebar?.[0]?.label,
      'Dashboard',
      'other items fall back to English',
    )
  },
)

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
