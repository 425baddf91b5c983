/**
 * postgres.js 3.4.9, vendored with fixes for lost connections (src/vendor/postgres/README.md).
 * Every module, test and benchmark takes it from here, so all run the driver that ships.
 */
import postgres from '../vendor/postgres/index.js'

export default postgres
