/**
 * `npm start` and the CLI on the embedded PostgreSQL, from a clone of their
 * own in a folder of mode 0700, as a newcomer runs them: as root (then the
 * server runs as the postgres OS user, from places that user can reach) or
 * as an ordinary user. And every way the embedded server can fail to start
 * ends in one line and exit 1, never a stack trace.
 */
import { randomBytes } from 'node:crypto'
import { chmod, chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { CLUSTER_RECORD, findFreePort, ROOT_CLUSTERS_DIR } from '../../src/embedded/embedded.js'
import { resolvePostgresRuntime } from '../../src/embedded/postgres-runtime.js'
import { copyClone } from '../helpers/clone-copy.js'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { runNode, spawnService } from '../helpers/service-process.js'

const isRoot = process.getuid?.() === 0

/** One line on stderr, saying what failed, and no stack trace anywhere. */
function assertOneLineFailure(
  t: Test,
  result: { code: number | null; stdout: string; stderr: string },
  expected: RegExp,
): void {
  t.equal(result.code, 1, 'exit code 1')
  const lines = result.stderr.trim().split('\n')
  t.equal(lines.length, 1, `one line: ${result.stderr}`)
  t.match(lines[0] ?? '', expected)
  t.notMatch(`${result.stdout}\n${result.stderr}`, /^\s+at /m, 'no stack trace')
  t.notMatch(result.stderr, /Unhandled 'error' event/)
}

t.test(
  'from a clone in a 0700 folder: the service starts, keeps its data, and the CLI reaches it',
  async (t) => {
    const clone = await copyClone(t)
    const port = await findFreePort()
    const first = spawnService(t, { PORT: String(port) }, clone.root)
    const ready = await first.waitForLine(
      (line) => typeof line.curl === 'string',
      'the curl line',
      90_000,
    )
    t.ok(
      first.lines.some((line) => line.includes('creating the embedded PostgreSQL cluster')),
      'a new cluster on the first start',
    )
    const [, token = '', target = ''] =
      /Bearer ([A-Za-z0-9_.-]+)' (http:\/\/\S+)$/.exec(String(ready.curl)) ?? []
    const url = new URL(target)
    const shell = await httpRequest(url.origin, url.pathname, bearer(token))
    t.equal(shell.status, 200, 'the logged curl works')

    if (isRoot) {
      const cluster = (await readFile(join(clone.dataDir, CLUSTER_RECORD), 'utf8')).trim()
      t.notOk(cluster.startsWith(clone.root), `the cluster is outside the clone: ${cluster}`)
      const postgresUid = (await stat(cluster)).uid
      t.not(postgresUid, 0, 'and belongs to the user the server runs as')
    }

    // The CLI beside the running service uses its server, and its token fits the service.
    const exported = await runNode('src/cli/main.ts', ['export', 'crm'], {}, clone.root)
    t.equal(exported.code, 0, exported.stderr)
    t.match(exported.stdout, /"key": "crm"/)
    const printed = await runNode(
      'src/cli/main.ts',
      ['token', '--roles', 'crm-sales'],
      {},
      clone.root,
    )
    t.equal(printed.code, 0, printed.stderr)
    const withCliToken = await httpRequest(url.origin, url.pathname, bearer(printed.stdout.trim()))
    t.equal(withCliToken.status, 200, 'a token from `shell-data token` without PORT is accepted')

    first.child.kill('SIGTERM')
    t.equal((await first.exited).code, 0, 'stops cleanly, the embedded server with it')

    const second = spawnService(t, { PORT: String(await findFreePort()) }, clone.root)
    await second.waitForLine((line) => typeof line.curl === 'string', 'the second start', 90_000)
    t.notOk(
      second.lines.some((line) => /creating the embedded PostgreSQL cluster|seeded/.test(line)),
      'the second start finds the same cluster and its data',
    )
    second.child.kill('SIGTERM')
    t.equal((await second.exited).code, 0)
  },
)

t.test('a broken data folder: one line and exit 1, from the service and the CLI', async (t) => {
  const clone = await copyClone(t)
  // A cluster folder that PostgreSQL does not recognise: PG_VERSION and nothing else; as
  // root, where the clone's record sends the server (copyClone's teardown removes it).
  const broken = isRoot
    ? join(ROOT_CLUSTERS_DIR, `broken-${randomBytes(6).toString('hex')}`, 'pg')
    : join(clone.dataDir, 'pg')
  await mkdir(broken, { recursive: true, mode: 0o700 })
  await writeFile(join(broken, 'PG_VERSION'), '17\n')
  if (isRoot) {
    const { user } = await resolvePostgresRuntime(pino({ level: 'silent' }))
    await chown(dirname(broken), user?.uid ?? 0, user?.gid ?? 0)
    await mkdir(clone.dataDir, { recursive: true })
    await writeFile(join(clone.dataDir, CLUSTER_RECORD), `${broken}\n`)
  }
  const service = spawnService(t, { PORT: String(await findFreePort()) }, clone.root)
  const exit = await service.exited
  assertOneLineFailure(
    t,
    { code: exit.code, stdout: service.lines.join('\n'), stderr: service.stderr() },
    /^shell-data: the embedded PostgreSQL in .*\/pg did not start: .+; .*move it away/,
  )
  const migrate = await runNode('src/cli/main.ts', ['migrate'], {}, clone.root)
  assertOneLineFailure(t, migrate, /^shell-data: the embedded PostgreSQL in .* did not start/)
})

t.test(
  'as root with no postgres OS user and no way to make one: one line and exit 1',
  { skip: isRoot ? false : 'only root runs the embedded server as another OS user' },
  async (t) => {
    const clone = await copyClone(t)
    // `id` finds no user and `useradd` cannot make one, as on a machine without them.
    const tools = join(clone.root, 'no-users-bin')
    await mkdir(tools)
    for (const tool of ['id', 'useradd']) {
      await writeFile(
        join(tools, tool),
        `#!/bin/sh\necho "${tool}: not allowed here" >&2\nexit 1\n`,
      )
      await chmod(join(tools, tool), 0o755)
    }
    const started = await runNode(
      'src/main.ts',
      [],
      { PORT: String(await findFreePort()), PATH: tools },
      clone.root,
    )
    assertOneLineFailure(
      t,
      started,
      /^shell-data: PostgreSQL does not run as root, and there is no "postgres" OS user .*useradd: not allowed here/,
    )
  },
)
