/**
 * The PostgreSQL driver: postgres.js 3.4.9 as vendored in src/vendor/postgres
 * with the fixes that keep a lost connection from crashing the process or
 * wedging its reloads (src/vendor/postgres/README.md). Every module, test and
 * benchmark takes it from here, so all of them run the driver that ships.
 */
import postgres from '../vendor/postgres/index.js'

export default postgres
