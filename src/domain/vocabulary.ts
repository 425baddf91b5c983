/**
 * The words of the data model, written once: zones, kinds, patterns, tables' columns by field name.
 * The database's checks (sql/) spell the same rules; test/db/schema.test.ts holds them together.
 */

/** The four zones of the page frame, in the order the response lists them. */
export const ZONES = ['topbar', 'sidebar', 'footer', 'user-menu'] as const
export type Zone = (typeof ZONES)[number]

/** One value per zone, in zone order: menus, their schemas, their items. */
export function mapZones<T>(valueFor: (zone: Zone) => T): Record<Zone, T> {
  return Object.fromEntries(ZONES.map((zone) => [zone, valueFor(zone)])) as Record<Zone, T>
}

export const MENU_KINDS = ['link', 'search', 'action'] as const
export type MenuKind = (typeof MENU_KINDS)[number]

export const APP_KEY_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$'
export const ITEM_KEY_PATTERN = '^[a-z0-9][a-z0-9._-]{0,62}$'
export const COLOR_PATTERN = '^#[0-9a-fA-F]{6}$'
/** `en`, `de-CH`, `zh-Hant`: a language tag as the database stores it; compared case-insensitively. */
export const LANGUAGE_TAG_PATTERN = '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$'
/** The locale of an app that says nothing else. */
export const DEFAULT_LOCALE = 'en'

/** The schemes a link may name; anything else (`javascript:`, `data:`, `vbscript:`) is refused. */
const LINK_SCHEME = /^(https?|mailto):/i
/** A scheme: a colon before any of `/?#`. Without one, a path or a relative reference. */
const ANY_SCHEME = /^[^/?#]*:/
/** What a browser strips from both ends of a URL (C0 controls and space) before it reads it. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what it matches.
const URL_ENDS = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g
/** What a browser removes from anywhere in a URL (tab, line feed, carriage return): `java\tscript:`. */
const URL_REMOVED = /[\t\n\r]/g

/**
 * An item's `href`, an app's `homeUrl`, branding's `logoUrl` and `faviconUrl`: a path, a relative
 * reference, or an `https:`, `http:` or `mailto:` URL, read as a browser reads it (WHATWG URL:
 * the ends stripped, tabs and line breaks removed), so that no spelling of `javascript:` passes.
 * An allow-list, not a list of bad schemes. sql/009_link_schemes.sql spells the same rule.
 */
export function isAllowedLink(link: string): boolean {
  const read = link.replace(URL_ENDS, '').replace(URL_REMOVED, '')
  return !ANY_SCHEME.test(read) || LINK_SCHEME.test(read)
}

/** Columns the service reads, by field name; the database keeps others (`created_at`) itself. */
export const APP_COLUMNS = {
  appKey: 'app_key',
  name: 'name',
  description: 'description',
  homeUrl: 'home_url',
  defaultLocale: 'default_locale',
} as const

export const BRANDING_COLUMNS = {
  appKey: 'app_key',
  productName: 'product_name',
  logoUrl: 'logo_url',
  faviconUrl: 'favicon_url',
  primaryColor: 'primary_color',
  accentColor: 'accent_color',
  footerText: 'footer_text',
  theme: 'theme',
} as const

export const MENU_ITEM_COLUMNS = {
  id: 'id',
  appKey: 'app_key',
  itemKey: 'item_key',
  zone: 'zone',
  parentId: 'parent_id',
  position: 'position',
  kind: 'kind',
  label: 'label',
  icon: 'icon',
  href: 'href',
  external: 'external',
  rolloutPercent: 'rollout_percent',
  visibleFrom: 'visible_from',
  visibleUntil: 'visible_until',
} as const

export const GRANT_COLUMNS = {
  menuItemId: 'menu_item_id',
  role: 'role',
} as const

/** An item's label in a language other than its app's default locale. */
export const LABEL_COLUMNS = {
  menuItemId: 'menu_item_id',
  locale: 'locale',
  label: 'label',
} as const

/** The bigint columns, read as decimal strings whatever the driver's or JSON's way with them. */
export const ID_COLUMNS: ReadonlySet<string> = new Set(['id', 'parent_id', 'menu_item_id'])

/** The timestamptz columns: read as milliseconds since the epoch, whatever the session's time zone. */
export const INSTANT_COLUMNS: ReadonlySet<string> = new Set(['visible_from', 'visible_until'])

export type ColumnMap = Readonly<Record<string, string>>

/** Keys, roles and tags in UTF-16 code-unit order, as `collate "C"`, the same on every instance. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Entries of a record or map in code-unit order of their keys. */
export function sortedEntries<T>(entries: Iterable<[string, T]>): [string, T][] {
  return [...entries].sort(([a], [b]) => compareCodeUnits(a, b))
}
