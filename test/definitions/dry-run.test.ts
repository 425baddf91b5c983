import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import postgres from '../../src/db/postgres-driver.js'
import { createTestDatabase } from '../helpers/database.js'
import { dumpRows, runCli } from '../helpers/shell-data-cli.js'
import { sleep, waitFor } from '../helpers/wait.js'

const dir = await mkdtemp(join(tmpdir(), 'shell-data-dry-run-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
let fileCount = 0
async function writeDefinitions(content: unknown): Promise<string> {
  const file = join(dir, `definitions-${fileCount++}.json`)
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2))
  return file
}

/**
 * Listens on the change channel; `takeNotifications` sends a marker and
 * returns what came before it, so "none" is proven without waiting on a
 * guess of how long a notification might take.
 */
async function listenForChanges(
  t: Test,
  url: string,
): Promise<{ takeNotifications(): Promise<string[]> }> {
  const listener = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => listener.end())
  const received: string[] = []
  await listener.listen('shell_changed', (payload) => received.push(payload))
  return {
    async takeNotifications() {
      await listener`select pg_notify('shell_changed', 'marker')`
      await waitFor(() => received.includes('marker'), 'the marker notification')
      return received.splice(0).filter((payload) => payload !== 'marker')
    },
  }
}

interface LooseItem {
  id: string
  label: string
  href?: string
  labels?: Record<string, string>
  roles?: string[]
  children?: LooseItem[]
}

/** What a person would do to an exported crm before importing it again. */
function editCrm(exported: string): unknown {
  const document = JSON.parse(exported)
  const [crm] = document.apps
  crm.name = 'Acme CRM'
  crm.branding.primaryColor = '#ff0000'
  const sidebar: LooseItem[] = crm.menus.sidebar
  const find = (id: string) => {
    const item = sidebar.find((candidate) => candidate.id === id)
    if (item === undefined) throw new Error(`no ${id} in the export`)
    return item
  }
  const leads = find('leads')
  leads.label = 'Prospects'
  leads.labels = { de: 'Leads', fr: 'Prospects' }
  leads.roles = ['crm-sales', 'crm-admin']
  find('reports').children = [
    { id: 'forecasts', label: 'Forecasts', href: '/crm/reports/forecasts', roles: ['crm-manager'] },
  ]
  const admin = find('admin')
  sidebar.splice(sidebar.indexOf(admin), 1)
  sidebar.unshift(admin)
  sidebar.push(...crm.menus.footer)
  delete crm.menus.footer
  crm.menus['user-menu'] = crm.menus['user-menu'].filter((item: LooseItem) => item.id !== 'support')
  return document
}

const EDITS_PLANNED = `crm: change
  ~ app: name "CRM" → "Acme CRM"
  ~ branding: primaryColor "#0b5fff" → "#ff0000"
  ~ item admin: position 7 → 0
  ~ item leads: label "Leads" → "Prospects"
  ~ item leads: roles ["crm-sales"] → ["crm-admin", "crm-sales"]
  ~ item leads: labels de "Interessenten" → "Leads"
  + item forecasts (sidebar, under reports, position 0): label "Forecasts", href "/crm/reports/forecasts", roles ["crm-manager"]
  ~ item docs: zone footer → sidebar
  ~ item docs: position 0 → 8
  - item support (user-menu, top level, position 1): label "Help & support"
`

t.test('export, edit, dry run: exactly the edits, no row written, no notification', async (t) => {
  const db = await createTestDatabase(t)
  t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
  const exported = await runCli(db.url, 'export')
  t.equal(exported.code, 0, exported.stderr)
  const edited = await writeDefinitions(editCrm(exported.stdout))
  const before = await dumpRows(db.sql)
  const changes = await listenForChanges(t, db.url)

  const plan = await runCli(db.url, 'import', '--dry-run', edited)
  t.equal(plan.code, 0, plan.stderr)
  t.equal(plan.stderr, '', 'nothing on stderr')
  t.equal(plan.stdout, EDITS_PLANNED)
  t.same(await dumpRows(db.sql), before, 'every row as it was')
  t.same(await changes.takeNotifications(), [], 'no notification')

  const unchanged = await runCli(
    db.url,
    'import',
    await writeDefinitions(exported.stdout),
    '--dry-run',
  )
  t.equal(unchanged.code, 0, unchanged.stderr)
  t.equal(
    unchanged.stdout,
    'crm: unchanged\n',
    'the export as it is: unchanged, flag after the file',
  )
})

t.test(
  'plan, import, plan: the import does what the plan said, then nothing is left',
  async (t) => {
    const db = await createTestDatabase(t)
    t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
    const edited = await writeDefinitions(editCrm((await runCli(db.url, 'export')).stdout))
    const added = await writeDefinitions({
      apps: [{ key: 'kiosk', name: 'Kiosk', menus: { topbar: [{ id: 'home', label: 'Home' }] } }],
    })

    const plan = await runCli(db.url, 'import', '--dry-run', edited, added)
    t.equal(plan.code, 0, plan.stderr)
    t.equal(
      plan.stdout,
      `${EDITS_PLANNED}kiosk: create
  + app: name "Kiosk", description (none), homeUrl (none), defaultLocale en
  + item home (topbar, top level, position 0): label "Home", roles (everyone)
`,
      'one block per app, in file order',
    )
    const changes = await listenForChanges(t, db.url)
    const imported = await runCli(db.url, 'import', edited, added)
    t.equal(imported.stdout, 'crm: updated\nkiosk: created\n')
    t.not((await changes.takeNotifications()).length, 0, 'the import itself is announced')

    const again = await runCli(db.url, 'import', '--dry-run', edited, added)
    t.equal(again.code, 0, again.stderr)
    t.equal(again.stdout, 'crm: unchanged\nkiosk: unchanged\n')
    t.equal(
      (await runCli(db.url, 'import', edited, added)).stdout,
      'crm: unchanged\nkiosk: unchanged\n',
    )
  },
)

t.test('a dry run does not wait for an import in progress', async (t) => {
  const db = await createTestDatabase(t)
  t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
  const renamed = await writeDefinitions({ apps: [{ key: 'crm', name: 'Renamed' }] })
  let release = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  let locked = () => {}
  const lockTaken = new Promise<void>((resolve) => {
    locked = resolve
  })
  // What an import holds while it writes: the app's advisory lock and its rows, uncommitted.
  const importing = db.sql
    .begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext('shell.apps'), hashtext('crm'))`
      await tx`update shell.apps set name = 'Half written' where app_key = 'crm'`
      await tx`delete from shell.menu_items where app_key = 'crm'`
      locked()
      await held
      throw new Error('rolled back on purpose')
    })
    .catch(() => {})
  await lockTaken
  try {
    const running = runCli(db.url, 'import', '--dry-run', renamed)
    // Far longer than a dry run takes; a dry run that waits for the lock never ends before release.
    const waited = await Promise.race([running.then(() => false), sleep(30_000).then(() => true)])
    t.notOk(waited, 'done while the import holds its lock')
    release()
    const plan = await running
    t.equal(plan.code, 0, plan.stderr)
    t.match(
      plan.stdout,
      /^crm: change\n {2}~ app: name "CRM" → "Renamed"\n/,
      'planned on what is committed',
    )
  } finally {
    release()
    await importing
  }
})

t.test(
  'an invalid file: the problems an import prints, exit 1, nothing read or written',
  async (t) => {
    const db = await createTestDatabase(t)
    t.equal((await runCli(db.url, 'import', 'seeds/crm.json')).code, 0)
    const before = await dumpRows(db.sql)
    const valid = await writeDefinitions({ apps: [{ key: 'valid', name: 'Valid' }] })
    const invalid = await writeDefinitions({
      apps: [
        {
          key: 'Bad Key',
          name: 'Bad',
          branding: { primaryColor: 'blue' },
          menus: {
            sidebar: [
              { id: 'a', label: 'A', labels: { en: 'A' } },
              { id: 'a', label: 'A again' },
            ],
          },
        },
      ],
    })
    const broken = await writeDefinitions('{"apps": [')
    for (const paths of [[invalid], [valid, invalid], [broken]]) {
      const imported = await runCli(db.url, 'import', ...paths)
      const planned = await runCli(db.url, 'import', '--dry-run', ...paths)
      t.equal(planned.code, 1)
      t.equal(planned.stdout, '')
      t.match(planned.stderr, /^shell-data import: nothing written, \d+ problems?:\n/)
      t.equal(planned.stderr, imported.stderr, 'the same problems as the import')
    }
    const planned = await runCli(db.url, 'import', '--dry-run', invalid)
    for (const path of [
      '$.apps[0].key',
      '$.apps[0].branding.primaryColor',
      '$.apps[0].menus.sidebar[0].labels.en',
      '$.apps[0].menus.sidebar[1].id',
    ])
      t.ok(planned.stderr.includes(`${invalid}: ${path}: `), `names ${path}`)
    t.same(await dumpRows(db.sql), before, 'the database is unchanged')
  },
)

t.test('options: an unknown one is refused in one line, and files are required', async (t) => {
  const db = await createTestDatabase(t)
  const unknown = await runCli(db.url, 'import', '--dry', 'seeds/crm.json')
  t.equal(unknown.code, 1)
  t.equal(unknown.stdout, '')
  t.match(unknown.stderr, /^shell-data import: Unknown option '--dry'[^\n]*\n$/)
  const none = await runCli(db.url, 'import', '--dry-run')
  t.equal(none.code, 1)
  t.equal(none.stderr, 'shell-data import: name one or more definition files\n')
  t.same(await db.sql`select app_key from shell.apps`, [], 'nothing imported')
})
