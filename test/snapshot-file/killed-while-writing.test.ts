/**
 * The file is replaced atomically: the real process, SIGKILLed in the middle of writing its
 * snapshot file and just after, over and over while commits stream in, always leaves a whole
 * file, the previous one or the new one, never a mix; what a killed write left beside it is gone
 * once the next start is under way; started again with the database refusing, it is ready on
 * that file.
 */
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { readMigrationFiles } from '../../src/db/migrate.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { readSnapshotFile } from '../../src/snapshot-file/read-snapshot-file.js'
import { httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { createSeededDatabase } from '../helpers/service.js'
import { spawnService } from '../helpers/service-process.js'
import { waitFor } from '../helpers/wait.js'

/** Apps besides the seed one, so that a write takes long enough to be caught in the middle. */
const EXTRA_APPS = 400
const ROUNDS = 4

const db = await createSeededDatabase(t)
await db.sql`
  insert into shell.apps (app_key, name) select 'app-' || n, 'App ' || n from generate_series(1, ${EXTRA_APPS}) n`
await db.sql`
  insert into shell.menu_items (app_key, item_key, zone, label, href, position)
  select 'app-' || a, 'item-' || i, 'sidebar', 'An item with a label of some length ' || i,
    '/app-' || a || '/a/page/of/its/own/' || i, i
  from generate_series(1, ${EXTRA_APPS}) a, generate_series(1, 20) i`
const jwks = await startJwksServer(t)
const dir = await mkdtemp(join(tmpdir(), 'shell-data-killed-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const file = join(dir, 'snapshot')
const migrations = (await readMigrationFiles()).map((each) => `${each.name} ${each.checksum}`)
const silent = pino({ level: 'silent' })
/** A write's file beside the snapshot: `snapshot.<16 hex digits>.tmp`. */
const TEMPORARY = /^snapshot\.[0-9a-f]{16}\.tmp$/
const temporaryFiles = async () => (await readdir(dir)).filter((name) => TEMPORARY.test(name))
/** What the kills left behind, which the next start removes. */
const leftBehind = new Set<string>()
const noneLeftBehind = async () => {
  const names = new Set(await readdir(dir))
  return [...leftBehind].every((name) => !names.has(name))
}

function startInstance(databaseUrl: string) {
  return findFreePort().then((port) => ({
    url: `http://127.0.0.1:${port}`,
    process: spawnService(t, {
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      OIDC_ISSUER: jwks.issuer,
      OIDC_AUDIENCE: 'shell-data',
      SNAPSHOT_FILE: file,
      LOG_LEVEL: 'warn',
    }),
  }))
}

const readyOn = async (url: string) => {
  const response = await httpRequest(url, '/readyz').catch(() => undefined)
  return response?.status === 200 ? response.json<{ snapshot: { source: string } }>() : undefined
}

/** The names crm had in the database, by generation: what a whole file may hold. */
const committed: string[] = []
let generation = 0

t.test('killed in the middle of a write, or just after: a whole file each time', async (t) => {
  for (let round = 1; round <= ROUNDS; round += 1) {
    const instance = await startInstance(db.url)
    await waitFor(async () => (await readyOn(instance.url)) !== undefined, 'ready', 60_000)
    await waitFor(noneLeftBehind, 'what the last kill left behind removed')
    // A file to replace: the first start writes one once it is ready.
    let before = await readSnapshotFile(file, { migrations, logger: silent })
    await waitFor(async () => {
      before = await readSnapshotFile(file, { migrations, logger: silent })
      return before !== undefined
    }, 'a first file')
    // Commits stream in; the process is killed as its next write is under way (the file
    // beside the snapshot exists), or, every other round, as soon as it has replaced it.
    let streaming = true
    const stream = (async () => {
      while (streaming) {
        generation += 1
        const name = `CRM generation ${generation}`
        committed.push(name)
        await db.sql`update shell.apps set name = ${name} where app_key = 'crm'`
      }
    })()
    // The last round is killed mid-write, for the start after it.
    const midWrite = round % 2 === 0
    await waitFor(
      async () => {
        if (midWrite) return (await temporaryFiles()).length > 0
        const now = await readSnapshotFile(file, { migrations, logger: silent })
        return now !== undefined && now.snapshot.version !== before?.snapshot.version
      },
      midWrite ? 'a write under way' : 'a new file in place',
      30_000,
    )
    instance.process.child.kill('SIGKILL')
    await instance.process.exited
    streaming = false
    await stream
    for (const name of await temporaryFiles()) leftBehind.add(name)

    const after = await readSnapshotFile(file, { migrations, logger: silent })
    t.ok(after, `round ${round} (${midWrite ? 'mid-write' : 'just after'}): a whole file`)
    const name = after === undefined ? undefined : crmName(after.snapshot)
    t.ok(
      name !== undefined && [...committed, 'CRM'].includes(name),
      `of a committed state (${name})`,
    )
  }
})

t.test('started with the database refusing, ready on the last whole file', async (t) => {
  const kept = await readSnapshotFile(file, { migrations, logger: silent })
  if (kept === undefined) throw new Error('no whole file')
  t.ok(leftBehind.size > 0, `the kills mid-write left ${leftBehind.size} files behind`)
  // And one that is a link, to a file that must survive its removal.
  const victim = join(dir, 'not-the-service-s')
  await writeFile(victim, 'kept')
  const link = 'snapshot.0123456789abcdef.tmp'
  await symlink(victim, join(dir, link))
  leftBehind.add(link)
  const closedPort = await findFreePort()
  const instance = await startInstance(db.url.replace(/:\d+\//, `:${closedPort}/`))
  await waitFor(async () => (await readyOn(instance.url)) !== undefined, 'ready', 60_000)
  t.equal((await readyOn(instance.url))?.snapshot.source, 'file')
  const readiness = await httpRequest(instance.url, '/readyz')
  t.equal(
    readiness.json<{ snapshot: { version: string } }>().snapshot.version,
    kept.snapshot.version,
  )
  await waitFor(noneLeftBehind, 'what the kills left behind removed')
  t.same(await temporaryFiles(), [], 'nothing beside the file')
  t.equal(await readFile(victim, 'utf8'), 'kept', "a link's target untouched")
  instance.process.child.kill('SIGTERM')
  await instance.process.exited
})

/** crm's name as the snapshot lists it. */
function crmName(snapshot: Snapshot): string | undefined {
  const { apps } = JSON.parse(snapshot.appsInventory.bytes().toString()) as {
    apps: { key: string; name: string }[]
  }
  return apps.find((app) => app.key === 'crm')?.name
}
