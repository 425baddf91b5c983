import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type postgres from '../../src/db/postgres-driver.js'

const execFileAsync = promisify(execFile)
const CLI = ['--import', 'tsx', 'src/cli/main.ts']

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs the real `shell-data` command against a test database. */
export async function runCli(databaseUrl: string, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [...CLI, ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string }
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr }
  }
}

/** Every row of every table, for "nothing changed" checks. */
export async function dumpRows(sql: postgres.Sql): Promise<unknown> {
  return sql`
    select json_build_object(
      'apps', (select coalesce(json_agg(a order by app_key), '[]') from shell.apps a),
      'branding', (select coalesce(json_agg(b order by app_key), '[]') from shell.branding b),
      'items', (select coalesce(json_agg(m order by id), '[]') from shell.menu_items m),
      'grants', (select coalesce(json_agg(g order by menu_item_id, role), '[]') from shell.menu_role_grants g),
      'labels', (select coalesce(json_agg(l order by menu_item_id, locale), '[]') from shell.menu_item_labels l)
    ) as rows`
}
