/**
 * Where the primary's log ends, as a standby's replay position will show it:
 * `pg_current_wal_insert_lsn()` less the page header that follows a record
 * ending on a page boundary. Pure; the positions are PostgreSQL's own layout
 * (8 KiB pages, 16 MiB segments, headers of 24 and 40 bytes).
 */
import t from 'tap'
import { findLastRecordEnd, formatWalPosition } from '../../src/db/wal-positions.js'

const PAGE = 8192n
const SEGMENT = 16n * 1024n * 1024n

t.test('inside a page, the insert position is where the last record ended', async (t) => {
  t.equal(findLastRecordEnd(0x14d9578n, PAGE, SEGMENT), 0x14d9578n)
  t.equal(
    findLastRecordEnd(3n * PAGE + 48n, PAGE, SEGMENT),
    3n * PAGE + 48n,
    'a record after a header',
  )
})

t.test('after a page boundary, the header is not waited for', async (t) => {
  t.equal(findLastRecordEnd(3n * PAGE + 24n, PAGE, SEGMENT), 3n * PAGE, 'a short header')
  t.equal(
    findLastRecordEnd(5n * SEGMENT + 40n, PAGE, SEGMENT),
    5n * SEGMENT,
    'a segment long header',
  )
  t.equal(
    findLastRecordEnd(5n * SEGMENT + PAGE + 24n, PAGE, SEGMENT),
    5n * SEGMENT + PAGE,
    "a segment's second page has a short one",
  )
})

t.test('positions print as PostgreSQL prints a pg_lsn', async (t) => {
  t.equal(formatWalPosition(0x14d9578n), '0/14D9578')
  t.equal(formatWalPosition((0x16n << 32n) + 0xb374d848n), '16/B374D848')
})
