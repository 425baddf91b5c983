/**
 * The driver that ships declares the fixes the service relies on, and a
 * driver without them (the npm release, or a copy put in its place) is
 * refused at start in one line, before any database is touched.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import postgres, {
  assertDriverFixes,
  DriverError,
  REQUIRED_DRIVER_FIXES,
} from '../../src/db/postgres-driver.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import { copyClone } from '../helpers/clone-copy.js'
import { runNode } from '../helpers/service-process.js'

t.test('the vendored driver carries every required fix', async (t) => {
  t.same([...postgres.shellDataFixes].sort(), [...REQUIRED_DRIVER_FIXES].sort())
  t.doesNotThrow(() => assertDriverFixes())
})

t.test('a driver that lacks one is refused with one line naming it', async (t) => {
  const [kept = '', ...dropped] = REQUIRED_DRIVER_FIXES
  t.throws(() => assertDriverFixes({ shellDataFixes: [kept] }), DriverError)
  try {
    assertDriverFixes({})
  } catch (error) {
    t.match((error as Error).message, /^the PostgreSQL driver lacks fixes [^\n]*$/)
    for (const fix of dropped) t.match((error as Error).message, fix)
  }
})

t.test('the service and the CLI refuse to start on the unfixed driver', async (t) => {
  const clone = await copyClone(t)
  // The declaration removed: what a copy of the npm release would look like.
  const driver = join(clone.root, 'src/vendor/postgres/index.js')
  const text = await readFile(driver, 'utf8')
  await writeFile(driver, text.replace(/Postgres\.shellDataFixes = [^\]]*\]\)\n/, ''))
  for (const [entry, args] of [
    ['src/main.ts', []],
    ['src/cli/main.ts', ['migrate']],
  ] as const) {
    const result = await runNode(
      entry,
      [...args],
      { PORT: String(await findFreePort()), DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      clone.root,
    )
    t.equal(result.code, 1, `${entry}: exit code 1`)
    const lines = result.stderr.trim().split('\n')
    t.equal(lines.length, 1, `${entry}: one line: ${result.stderr}`)
    t.match(lines[0] ?? '', /^shell-data: the PostgreSQL driver lacks fixes/)
  }
})
