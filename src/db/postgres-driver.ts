/**
 * The PostgreSQL driver: postgres.js 3.4.9 as vendored in src/vendor/postgres
 * with the fixes that keep a lost connection from crashing the process or
 * wedging its reloads (src/vendor/postgres/README.md). Every module, test and
 * benchmark takes it from here, so all of them run the driver that ships.
 */
import postgres from '../vendor/postgres/index.js'

export default postgres

/**
 * Fixes the service relies on, by the upstream pull request or issue each
 * mirrors. A driver that does not carry every one of them is refused at start.
 */
export const REQUIRED_DRIVER_FIXES: readonly string[] = [
  'porsager/postgres#1168',
  'porsager/postgres#1209',
  'porsager/postgres#1215',
  'porsager/postgres#1223',
  'porsager/postgres#1192',
]

/** The required fixes the given driver does not declare; none for the vendored copy. */
function findMissingDriverFixes(driver: { shellDataFixes?: readonly string[] }): string[] {
  const carried = new Set(driver.shellDataFixes ?? [])
  return REQUIRED_DRIVER_FIXES.filter((fix) => !carried.has(fix))
}

/** The driver in use lacks fixes the service relies on; its message is one line. */
export class DriverError extends Error {
  override name = 'DriverError'
}

/** Refuses a driver that does not carry every required fix, before it meets a database. */
export function assertDriverFixes(driver: { shellDataFixes?: readonly string[] } = postgres): void {
  const missing = findMissingDriverFixes(driver)
  if (missing.length === 0) return
  throw new DriverError(
    `the PostgreSQL driver lacks fixes the service relies on (${missing.join(', ')}), so a lost connection could crash it or stop its reloads; build and install this package whole (npm run build; npm ci), without replacing dist/vendor/postgres`,
  )
}
