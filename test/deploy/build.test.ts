/**
 * `npm run build` as package.json runs it, in a copy of the sources: what
 * `npm start`, `prepare` and the image's build stage all rely on.
 */
import { execFile } from 'node:child_process'
import { chmod, cp, mkdtemp, rm, stat, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'

const execFileAsync = promisify(execFile)
const root = process.cwd()
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

const copyDir = await mkdtemp(join(tmpdir(), 'shell-data-build-'))
t.teardown(() => rm(copyDir, { recursive: true, force: true }))
for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src']) {
  await cp(join(root, entry), join(copyDir, entry), { recursive: true })
}
await symlink(join(root, 'node_modules'), join(copyDir, 'node_modules'), 'dir')

const bin = join(copyDir, 'dist/cli/main.js')
const build = () => execFileAsync(npm, ['run', 'build'], { cwd: copyDir })
const modeOf = async (path: string) => (await stat(path)).mode & 0o777

await build()

t.test('the bin is executable and runs by its shebang, as npx and npm link run it', async (t) => {
  t.equal(await modeOf(bin), 0o755, 'dist/cli/main.js is rwxr-xr-x')
  const usage = await execFileAsync(bin, ['--help'], { cwd: copyDir })
  t.match(usage.stdout, /shell-data token/)
})

t.test('the build copies what tsc does not emit, and builds the client modules', async (t) => {
  for (const file of [
    'dist/vendor/postgres/index.js',
    'dist/preview/index.html',
    'dist/client/shell-client.js',
    'dist/client/shell-frame.d.ts',
    'dist/client/served/shell-client.js',
    'dist/client/served/shell-frame.js.map',
  ]) {
    t.ok((await stat(join(copyDir, file))).isFile(), `${file} is there`)
  }
})

t.test('a rebuild over a bin without the bit makes it executable again', async (t) => {
  // A rebuild keeps a file's mode, and npx reuses its cache of a folder without linking the
  // bin again: a dist/ made without the bit used to answer npx with "Permission denied".
  await chmod(bin, 0o644)
  await build()
  t.equal(await modeOf(bin), 0o755)
})
