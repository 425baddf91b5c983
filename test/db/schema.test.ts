import t from 'tap'
import type postgres from '../../src/db/postgres-driver.js'
import {
  APP_COLUMNS,
  APP_KEY_PATTERN,
  BRANDING_COLUMNS,
  COLOR_PATTERN,
  DEFAULT_LOCALE,
  GRANT_COLUMNS,
  ITEM_KEY_PATTERN,
  LABEL_COLUMNS,
  LANGUAGE_TAG_PATTERN,
  MENU_ITEM_COLUMNS,
  MENU_KINDS,
  ZONES,
} from '../../src/domain/vocabulary.js'
import { createTestDatabase } from '../helpers/database.js'
import { ACCEPTED_LINKS, REFUSED_LINKS } from '../helpers/link-cases.js'

/** Every table of schema `shell` the service reads, with its columns. */
const TABLES = {
  apps: APP_COLUMNS,
  branding: BRANDING_COLUMNS,
  menu_items: MENU_ITEM_COLUMNS,
  menu_role_grants: GRANT_COLUMNS,
  menu_item_labels: LABEL_COLUMNS,
}

const db = await createTestDatabase(t)
const sql = db.sql

await sql`insert into shell.apps (app_key, name) values ('crm', 'CRM'), ('hr', 'HR')`
const [sidebarRoot] = await sql<{ id: string }[]>`
  insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'root', 'sidebar', 'Root')
  returning id`
const rootId = sidebarRoot?.id ?? ''

/** Thrown inside the transaction so that it is rolled back; never escapes `inRollback`. */
class Rollback extends Error {}

/**
 * Runs `work` in a transaction that is always rolled back, and returns what
 * it returned. An error of the work itself (a failed statement) is rethrown.
 */
async function inRollback<T>(work: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  let result: T | undefined
  try {
    await sql.begin(async (tx) => {
      result = await work(tx)
      throw new Rollback()
    })
  } catch (error) {
    if (error instanceof Rollback) return result as T
    throw error
  }
  throw new Error('the transaction committed')
}

/**
 * The SQLSTATE a statement fails with, or 'accepted' when it succeeds (in a
 * transaction that is rolled back either way). An error that is not a SQL
 * error (no SQLSTATE) is rethrown, so it can never pass for either outcome.
 */
async function sqlStateOf(
  statement: (tx: postgres.TransactionSql) => Promise<unknown>,
): Promise<string> {
  try {
    await inRollback(statement)
    return 'accepted'
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code
    throw error
  }
}

const rejected: Array<[string, string, (tx: postgres.TransactionSql) => Promise<unknown>]> = [
  [
    'app key with capitals',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values ('CRM2', 'x')`,
  ],
  [
    'app key starting with a dash',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values ('-crm', 'x')`,
  ],
  [
    'app key of 64 characters',
    '23514',
    (tx) => tx`insert into shell.apps (app_key, name) values (${'a'.repeat(64)}, 'x')`,
  ],
  ['app without name', '23502', (tx) => tx`insert into shell.apps (app_key) values ('x')`],
  [
    'duplicate app key',
    '23505',
    (tx) => tx`insert into shell.apps (app_key, name) values ('crm', 'again')`,
  ],
  [
    'branding of an unknown app',
    '23503',
    (tx) => tx`insert into shell.branding (app_key) values ('nope')`,
  ],
  [
    'branding twice',
    '23505',
    (tx) => tx`insert into shell.branding (app_key) values ('crm'), ('crm')`,
  ],
  [
    'primary colour by name',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, primary_color) values ('crm', 'blue')`,
  ],
  [
    'accent colour of 3 digits',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, accent_color) values ('crm', '#fff')`,
  ],
  [
    'theme that is not an object',
    '23514',
    (tx) => tx`insert into shell.branding (app_key, theme) values ('crm', '[1]')`,
  ],
  [
    'theme null',
    '23502',
    (tx) => tx`insert into shell.branding (app_key, theme) values ('crm', null)`,
  ],
  [
    'item of an unknown app',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('nope', 'a', 'sidebar', 'A')`,
  ],
  [
    'item key with a space',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a b', 'sidebar', 'A')`,
  ],
  [
    'item key starting with a dot',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', '.a', 'sidebar', 'A')`,
  ],
  [
    'duplicate item key in an app',
    '23505',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'root', 'footer', 'A')`,
  ],
  [
    'unknown zone',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('crm', 'a', 'header', 'A')`,
  ],
  [
    'unknown kind',
    '23514',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, kind) values ('crm', 'a', 'sidebar', 'A', 'button')`,
  ],
  [
    'item without label',
    '23502',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone) values ('crm', 'a', 'sidebar')`,
  ],
  [
    'external null',
    '23502',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, external) values ('crm', 'a', 'sidebar', 'A', null)`,
  ],
  [
    'parent in another zone',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a', 'footer', 'A', ${rootId})`,
  ],
  [
    'parent in another app',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('hr', 'a', 'sidebar', 'A', ${rootId})`,
  ],
  [
    'parent that does not exist',
    '23503',
    (tx) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a', 'sidebar', 'A', 999999)`,
  ],
  [
    'item as its own parent',
    '23514',
    (tx) => tx`update shell.menu_items set parent_id = id where id = ${rootId}`,
  ],
  [
    'explicit id',
    '428C9',
    (tx) =>
      tx`insert into shell.menu_items (id, app_key, item_key, zone, label) values (5, 'crm', 'a', 'sidebar', 'A')`,
  ],
  [
    'grant of an unknown item',
    '23503',
    (tx) => tx`insert into shell.menu_role_grants (menu_item_id, role) values (999999, 'r')`,
  ],
  [
    'grant twice',
    '23505',
    (tx) =>
      tx`insert into shell.menu_role_grants (menu_item_id, role) values (${rootId}, 'r'), (${rootId}, 'r')`,
  ],
  [
    'default locale that is not a language tag',
    '23514',
    (tx) => tx`update shell.apps set default_locale = 'English' where app_key = 'crm'`,
  ],
  [
    'default locale with an underscore',
    '23514',
    (tx) => tx`update shell.apps set default_locale = 'de_CH' where app_key = 'crm'`,
  ],
  ['default locale null', '23502', (tx) => tx`update shell.apps set default_locale = null`],
  [
    'label of an unknown item',
    '23503',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (999999, 'de', 'x')`,
  ],
  [
    'label locale that is not a language tag',
    '23514',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${rootId}, 'DE', 'x')`,
  ],
  [
    'label without text',
    '23502',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${rootId}, 'de', null)`,
  ],
  [
    'two labels of one item in one locale',
    '23505',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${rootId}, 'de', 'a'), (${rootId}, 'de', 'b')`,
  ],
  [
    'two labels of one item in one language spelled two ways',
    '23505',
    (tx) =>
      tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${rootId}, 'de-CH', 'a'), (${rootId}, 'de-ch', 'b')`,
  ],
  [
    'blank role',
    '23514',
    (tx) => tx`insert into shell.menu_role_grants (menu_item_id, role) values (${rootId}, ' ')`,
  ],
]

for (const [name, code, statement] of rejected) {
  t.test(`rejects ${name}`, async (t) => {
    t.equal(await sqlStateOf(statement), code)
  })
}

t.test('accepts the edge cases the rules allow', async (t) => {
  t.equal(
    await sqlStateOf(async (tx) => {
      await tx`insert into shell.apps (app_key, name) values (${`a${'-'.repeat(62)}`}, 'x'), ('0', 'y')`
      await tx`insert into shell.branding (app_key, primary_color, accent_color) values ('hr', '#0B5FFF', null)`
      await tx`insert into shell.menu_items (app_key, item_key, zone, label, parent_id) values ('crm', 'a.b_c-d', 'sidebar', 'A', ${rootId})`
      await tx`insert into shell.menu_items (app_key, item_key, zone, label) values ('hr', 'root', 'user-menu', 'Same key, other app')`
      await tx`update shell.apps set default_locale = 'zh-Hant' where app_key = 'hr'`
      await tx`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${rootId}, 'pt-BR', 'Raiz'), (${rootId}, 'de-CH-1996', 'Wurzel')`
    }),
    'accepted',
  )
})

/** An insert of a row with `link` in each link column, as psql or an admin tool would write it. */
const linkInserts: Array<
  [string, (tx: postgres.TransactionSql, link: string) => Promise<unknown>]
> = [
  [
    'apps.home_url',
    (tx, link) => tx`insert into shell.apps (app_key, name, home_url) values ('x', 'X', ${link})`,
  ],
  [
    'branding.logo_url',
    (tx, link) => tx`insert into shell.branding (app_key, logo_url) values ('hr', ${link})`,
  ],
  [
    'branding.favicon_url',
    (tx, link) => tx`insert into shell.branding (app_key, favicon_url) values ('hr', ${link})`,
  ],
  [
    'menu_items.href',
    (tx, link) =>
      tx`insert into shell.menu_items (app_key, item_key, zone, label, href) values ('crm', 'link', 'sidebar', 'Link', ${link})`,
  ],
]

for (const [column, insert] of linkInserts) {
  t.test(
    `${column}: a path, a relative reference, or an https:, http: or mailto: URL`,
    async (t) => {
      for (const link of REFUSED_LINKS) {
        // A text value cannot hold NUL at all: refused as an invalid byte sequence before any check.
        const code = link.includes('\u0000') ? '22021' : '23514'
        t.equal(await sqlStateOf((tx) => insert(tx, link)), code, `refuses ${JSON.stringify(link)}`)
      }
      for (const link of ACCEPTED_LINKS) {
        t.equal(
          await sqlStateOf((tx) => insert(tx, link)),
          'accepted',
          `accepts ${JSON.stringify(link)}`,
        )
      }
    },
  )
}

t.test('defaults: position 0, kind link, external false, theme {}', async (t) => {
  const defaults = await inRollback(async (tx) => {
    await tx`insert into shell.branding (app_key) values ('hr')`
    const [branding] = await tx<
      { theme: unknown }[]
    >`select theme from shell.branding where app_key = 'hr'`
    const [item] = await tx<{ position: number; kind: string; external: boolean }[]>`
      select position, kind, external from shell.menu_items where id = ${rootId}`
    return { theme: branding?.theme, item }
  })
  t.same(defaults, { theme: {}, item: { position: 0, kind: 'link', external: false } })
})

t.test('a cycle through several items is refused', async (t) => {
  const code = await sqlStateOf(async (tx) => {
    const [child] = await tx<{ id: string }[]>`
      insert into shell.menu_items (app_key, item_key, zone, label, parent_id)
      values ('crm', 'child', 'sidebar', 'Child', ${rootId}) returning id`
    await tx`update shell.menu_items set parent_id = ${child?.id ?? ''} where id = ${rootId}`
  })
  t.equal(code, '23514')
})

t.test('updated_at follows every update of an app', async (t) => {
  const [before] = await sql<
    { updated_at: Date }[]
  >`select updated_at from shell.apps where app_key = 'crm'`
  await sql`select pg_sleep(0.01)`
  await sql`update shell.apps set name = 'CRM!' where app_key = 'crm'`
  const [after] = await sql<
    { updated_at: Date }[]
  >`select updated_at from shell.apps where app_key = 'crm'`
  t.ok((after?.updated_at.getTime() ?? 0) > (before?.updated_at.getTime() ?? 0))
})

t.test('deleting an app removes its branding, items, grants and labels', async (t) => {
  await sql`insert into shell.apps (app_key, name) values ('gone', 'Gone')`
  await sql`insert into shell.branding (app_key) values ('gone')`
  const [parent] = await sql<{ id: string }[]>`
    insert into shell.menu_items (app_key, item_key, zone, label) values ('gone', 'p', 'topbar', 'P') returning id`
  const [child] = await sql<{ id: string }[]>`
    insert into shell.menu_items (app_key, item_key, zone, label, parent_id)
    values ('gone', 'c', 'topbar', 'C', ${parent?.id ?? ''}) returning id`
  await sql`insert into shell.menu_role_grants (menu_item_id, role) values (${child?.id ?? ''}, 'r')`
  await sql`insert into shell.menu_item_labels (menu_item_id, locale, label) values (${child?.id ?? ''}, 'de', 'K')`
  await sql`delete from shell.apps where app_key = 'gone'`
  const [counts] = await sql<{ branding: number; items: number; grants: number; labels: number }[]>`
    select (select count(*)::int from shell.branding where app_key = 'gone') as branding,
           (select count(*)::int from shell.menu_items where app_key = 'gone') as items,
           (select count(*)::int from shell.menu_role_grants where menu_item_id = ${child?.id ?? ''}) as grants,
           (select count(*)::int from shell.menu_item_labels where menu_item_id = ${child?.id ?? ''}) as labels`
  t.same(counts, { branding: 0, items: 0, grants: 0, labels: 0 })
})

t.test(
  'the database checks the words of src/domain/vocabulary.ts, no more and no fewer',
  async (t) => {
    const constraints = await sql<{ name: string; definition: string }[]>`
    select conname as name, pg_get_constraintdef(oid) as definition
    from pg_constraint where connamespace = 'shell'::regnamespace and contype = 'c'`
    const definitionOf = (name: string) =>
      constraints.find((constraint) => constraint.name === name)?.definition ?? ''
    const quotedWords = (definition: string) =>
      [...definition.matchAll(/'([^']*)'::text/g)].map((match) => match[1])
    t.same(quotedWords(definitionOf('menu_items_zone')), [...ZONES])
    t.same(quotedWords(definitionOf('menu_items_kind')), [...MENU_KINDS])
    t.same(quotedWords(definitionOf('apps_app_key_format')), [APP_KEY_PATTERN])
    t.same(quotedWords(definitionOf('menu_items_item_key_format')), [ITEM_KEY_PATTERN])
    t.same(quotedWords(definitionOf('branding_primary_color_format')), [COLOR_PATTERN])
    t.same(quotedWords(definitionOf('branding_accent_color_format')), [COLOR_PATTERN])
    t.same(quotedWords(definitionOf('apps_default_locale_format')), [LANGUAGE_TAG_PATTERN])
    t.same(quotedWords(definitionOf('menu_item_labels_locale_format')), [LANGUAGE_TAG_PATTERN])
    const [defaultLocale] = await sql<{ value: string }[]>`
    select column_default as value from information_schema.columns
    where table_schema = 'shell' and table_name = 'apps' and column_name = 'default_locale'`
    t.equal(defaultLocale?.value, `'${DEFAULT_LOCALE}'::text`)
    for (const zone of ZONES) {
      for (const kind of MENU_KINDS) {
        const code = await sqlStateOf(
          (tx) =>
            tx`insert into shell.menu_items (app_key, item_key, zone, label, kind) values ('hr', 'x', ${zone}, 'X', ${kind})`,
        )
        t.equal(code, 'accepted', `${zone} ${kind}`)
      }
    }
  },
)

t.test('every column the service reads exists; the others are kept by the database', async (t) => {
  const rows = await sql<{ table: string; column: string }[]>`
    select table_name as table, column_name as column
    from information_schema.columns where table_schema = 'shell'`
  for (const [table, columns] of Object.entries(TABLES)) {
    const inDatabase = rows.filter((row) => row.table === table).map((row) => row.column)
    const read: string[] = Object.values(columns)
    t.same(
      read.filter((column) => !inDatabase.includes(column)),
      [],
      `${table}: read columns exist`,
    )
    t.same(
      inDatabase.filter((column) => !read.includes(column)).sort(),
      table === 'apps' ? ['created_at', 'updated_at'] : [],
      `${table}: no column the service ignores but timestamps`,
    )
  }
})
