import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { createSeededDatabase } from '../helpers/service.js'

/** `shell-data`'s own settings: LOG_LEVEL read as the service reads it. */

const execFileAsync = promisify(execFile)
const db = await createSeededDatabase(t)

async function exportWith(logLevel: string) {
  return execFileAsync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'export', 'crm'], {
    env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: logLevel },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  )
}

t.test('an empty LOG_LEVEL is unset: the command runs, quiet', async (t) => {
  const result = await exportWith('')
  t.equal(result.code, 0, result.stderr)
  t.equal(JSON.parse(result.stdout).apps[0].key, 'crm')
  t.equal(result.stderr, '', 'nothing logged below warn')
})

t.test('a LOG_LEVEL that names no level stops in one line that names it', async (t) => {
  const result = await exportWith('loud')
  t.equal(result.code, 1)
  t.equal(result.stderr.trim().split('\n').length, 1)
  t.match(result.stderr, /\bLOG_LEVEL\b/)
})
