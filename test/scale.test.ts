/**
 * The service at the contract's scale, 5,000 apps of 40 items in three languages (a fixture
 * made by SQL), as an operator runs it: it answers /healthz while it loads them; its backends
 * terminated three times (a database restart), each complete reload that follows rebuilds
 * nothing; restarted, it starts from its snapshot file. How long each took and the memory it
 * held are commented, not asserted: the bench's `scale` scenario holds them to the contract.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { findFreePort } from '../src/embedded/embedded.js'
import { httpRequest } from './helpers/http-client.js'
import { startJwksServer } from './helpers/jwks-server.js'
import { createSeededDatabase } from './helpers/service.js'
import { spawnService } from './helpers/service-process.js'
import { waitFor } from './helpers/wait.js'

const APPS = 5_000
const ITEMS_PER_APP = 40

/** The fixture and two starts at this scale take a minute or more on a small machine. */
const SCALE_TIMEOUT_MS = 300_000

const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
const dir = await mkdtemp(join(tmpdir(), 'shell-data-scale-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))

/** Made in the first test, whose timeout covers it. */
async function makeFixture(t: Test): Promise<void> {
  const startedAt = performance.now()
  // Triggers off (each row would bump its app's revision): the revisions are made once, after.
  await db.sql.begin(async (sql) => {
    await sql`set local session_replication_role = replica`
    await sql`
    insert into shell.apps (app_key, name, description, home_url)
    select 'app-' || lpad(a::text, 4, '0'), 'Application ' || a, 'Generated ' || a, '/app-' || a
    from generate_series(1, ${APPS}) a`
    await sql`
    insert into shell.branding (app_key, product_name, primary_color)
    select app_key, 'Acme ' || app_key, '#0b5fff' from shell.apps where app_key like 'app-%'`
    await sql`
    insert into shell.menu_items (app_key, item_key, zone, label, icon, href, position)
    select a.app_key, 'item-' || i, (array['topbar','sidebar','footer','user-menu'])[1 + i % 4],
      'Item ' || i, 'icon-' || i, '/' || a.app_key || '/section/page-' || i, i
    from shell.apps a, generate_series(1, ${ITEMS_PER_APP}) i
    where a.app_key like 'app-%'`
    await sql`
    insert into shell.menu_item_labels (menu_item_id, locale, label)
    select m.id, l.locale, l.word || ' ' || m.position
    from shell.menu_items m, (values ('de', 'Eintrag'), ('fr', 'Élément')) as l(locale, word)
    where m.app_key like 'app-%'`
    await sql`
    insert into shell.menu_role_grants (menu_item_id, role)
    select id, 'role-' || (id % 20) from shell.menu_items where app_key like 'app-%' and id % 2 = 0`
    await sql`
    insert into shell.app_revisions (app_key) select app_key from shell.apps
    on conflict (app_key) do nothing`
  })
  await db.sql`analyze`
  t.comment(`fixture made in ${((performance.now() - startedAt) / 1000).toFixed(1)} s`)
}

async function startInstance() {
  const port = await findFreePort()
  const url = `http://127.0.0.1:${port}`
  const process = spawnService(t, {
    PORT: String(port),
    DATABASE_URL: db.url,
    OIDC_ISSUER: jwks.issuer,
    OIDC_AUDIENCE: 'shell-data',
    SNAPSHOT_FILE: join(dir, 'snapshot'),
    SHUTDOWN_DELAY_S: '0',
    LOG_LEVEL: 'info',
  })
  return { url, process }
}

interface Readiness {
  readonly status: number
  readonly snapshot?: { loadedAt: string; apps: number; source: string }
}

async function readiness(url: string): Promise<Readiness> {
  const response = await httpRequest(url, '/readyz').catch(() => undefined)
  if (response === undefined) return { status: 0 }
  // The body's own `status` ("ready") is not the HTTP status.
  const { snapshot } = response.json<Omit<Readiness, 'status'>>()
  return { status: response.status, ...(snapshot && { snapshot }) }
}

/** GET /healthz on a connection of its own, as a kubelet probes: its time, or -1 if refused. */
function probeHealth(url: string): Promise<number> {
  const { hostname, port } = new URL(url)
  const startedAt = performance.now()
  return new Promise((resolve) => {
    request({ hostname, port, path: '/healthz', agent: false }, (incoming) => {
      incoming.resume()
      incoming.on('end', () =>
        resolve(incoming.statusCode === 200 ? performance.now() - startedAt : -1),
      )
    })
      .on('error', () => resolve(-1))
      .end()
  })
}

async function reloadsOf(url: string): Promise<number> {
  const text = (await httpRequest(url, '/metrics')).text
  return Number(/^shell_snapshot_reloads_total\{result="success"\} (\d+)$/m.exec(text)?.[1])
}

t.test(
  '5,000 apps: /healthz answers while they load, and a reconnect rebuilds nothing',
  { timeout: SCALE_TIMEOUT_MS },
  async (t) => {
    await makeFixture(t)
    const { url, process } = await startInstance()
    // Polled every 20 ms on new connections from the moment it listens until it is ready.
    const answeredWhileLoading: number[] = []
    let ready = false
    await waitFor(async () => (await probeHealth(url)) >= 0, 'listening', 60_000)
    const listeningAt = performance.now()
    while (!ready) {
      const ms = await probeHealth(url)
      ready = (await readiness(url)).status === 200
      if (!ready && ms >= 0) answeredWhileLoading.push(ms)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    t.comment(`listening to ready: ${(performance.now() - listeningAt).toFixed(0)} ms`)
    t.ok(answeredWhileLoading.length > 0, 'answered while the first load ran')
    t.comment(
      `/healthz while loading: ${answeredWhileLoading.length} answers, slowest ${Math.max(...answeredWhileLoading).toFixed(0)} ms`,
    )
    const loaded = await readiness(url)
    t.equal(loaded.snapshot?.apps, APPS + 1, 'every app')

    for (let round = 1; round <= 3; round += 1) {
      const before = await reloadsOf(url)
      await db.sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where datname = ${db.name} and application_name like 'shell-data%'
        and pid <> pg_backend_pid()`
      const slowest: number[] = []
      await waitFor(async () => {
        slowest.push(await probeHealth(url))
        return (await reloadsOf(url)) > before
      }, `the reload after reconnect ${round}`)
      t.equal(
        (await readiness(url)).snapshot?.loadedAt,
        loaded.snapshot?.loadedAt,
        `reconnect ${round}: nothing changed, nothing rebuilt: the snapshot in service stays`,
      )
      t.comment(`reconnect ${round}: /healthz slowest ${Math.max(...slowest).toFixed(0)} ms`)
    }
    process.child.kill('SIGTERM')
    await process.exited
  },
)

t.test(
  '5,000 apps: restarted, it starts from its snapshot file',
  { timeout: SCALE_TIMEOUT_MS },
  async (t) => {
    const { url, process } = await startInstance()
    await process.waitForLine((line) => line.msg === 'snapshot file read', 'the file read', 60_000)
    await waitFor(async () => (await readiness(url)).status === 200, 'ready', 60_000)
    t.match(await readiness(url), { snapshot: { apps: APPS + 1, source: 'database' } })
    process.child.kill('SIGTERM')
    await process.exited
  },
)
