import type { MenuKind, Zone } from '../db/vocabulary.js'

/** One row of `shell.apps`, as the loader reads it. */
export interface AppRow {
  readonly appKey: string
  readonly name: string
  readonly description: string | null
  readonly homeUrl: string | null
  /** The language of `menu_items.label`; a language tag. */
  readonly defaultLocale: string
}

/** One row of `shell.branding`. */
export interface BrandingRow {
  readonly appKey: string
  readonly productName: string | null
  readonly logoUrl: string | null
  readonly faviconUrl: string | null
  readonly primaryColor: string | null
  readonly accentColor: string | null
  readonly footerText: string | null
  /** Parsed jsonb; any JSON value the database holds. */
  readonly theme: unknown
}

/** One row of `shell.menu_items`. Ids are bigint in the database, carried as decimal strings. */
export interface MenuItemRow {
  readonly id: string
  readonly appKey: string
  readonly itemKey: string
  readonly zone: Zone
  readonly parentId: string | null
  readonly position: number
  readonly kind: MenuKind
  readonly label: string
  readonly icon: string | null
  readonly href: string | null
  readonly external: boolean
}

/**
 * One shown-or-hidden item, holding only what rendering and the version need:
 * snapshots live long, and the loader's row objects would double the heap.
 */
export interface MenuNode {
  readonly position: number
  /** False for a pure grouping, which is dropped when none of its children is shown. */
  readonly hasHref: boolean
  /** Roles granted on the item, distinct and sorted; empty means every caller sees it. */
  readonly grants: readonly string[]
  readonly children: readonly MenuNode[]
  /** `{"id":…,"external":…,"children":[`: everything of the item but its children, in the default locale. */
  readonly openJson: string
  /** Where the label's JSON stands in `openJson`: another locale's label replaces that span. */
  readonly labelStart: number
  readonly labelEnd: number
  /**
   * The item's labels in other locales, flat: lowercased tag, label, tag,
   * label, …; null when none. Kept as text, not as rendered JSON: an item's
   * fields are spliced around another label only when a variant is rendered.
   */
  readonly localizedLabels: readonly string[] | null
  /** True when the item or an item below it has a label in another locale. */
  readonly labelled: boolean
  /**
   * The whole subtree's JSON, in the default locale, when no item in it has a
   * grant: its rendering cannot depend on the caller, so variants copy it
   * instead of walking it (in other locales too, when no item of it is labelled).
   */
  readonly fixedJson: string | null
}

/** An item's labels in locales other than its app's default, by lowercased tag. */
export type ItemLabels = ReadonlyMap<string, string>

/** One row of `shell.menu_role_grants`. */
export interface GrantRow {
  readonly menuItemId: string
  readonly role: string
}

/** One row of `shell.menu_item_labels`. */
export interface LabelRow {
  readonly menuItemId: string
  readonly locale: string
  readonly label: string
}

/** Everything one consistent read of the database returns. */
export interface SnapshotRows {
  readonly apps: readonly AppRow[]
  readonly branding: readonly BrandingRow[]
  readonly menuItems: readonly MenuItemRow[]
  readonly grants: readonly GrantRow[]
  readonly labels: readonly LabelRow[]
}

/** A precomputed response: its bytes and its strong ETag (quotes included). */
export interface RenderedBody {
  readonly body: Buffer
  readonly etag: string
}

/**
 * The shell response of one app for one role-set key and locale, split around
 * the `user` block so that the caller's block is spliced in without
 * re-serializing: body = head + userBlock + tail.
 */
export interface ShellVariant {
  /** `{"app":{...},"branding":{...},"user":`, shared by all variants of the app. */
  readonly head: Buffer
  /** `,"menus":{...},"locale":"…"}` */
  readonly tail: Buffer
  /** Short hash of head and tail, content-derived; combined with the caller's tag into the ETag. */
  readonly tag: string
}

export interface AppView {
  readonly key: string
  /**
   * Every role granted on any item of the app that a root leads to (items
   * cut off by a missing parent or a cycle are never shown, so their grants
   * cannot matter). Immutable: `add`, `delete` and `clear` throw.
   */
  readonly grantedRoles: ReadonlySet<string>
  /** The language of `menu_items.label`, as stored. */
  readonly defaultLocale: string
  /** The default locale and every locale of the app's labels, as stored, sorted. */
  readonly locales: readonly string[]
  /**
   * The locale to answer in for an `Accept-Language` header (undefined: none
   * sent), by RFC 4647 lookup among the app's locales; a header that does not
   * parse counts as absent. Memoized per header value, within a bound.
   */
  localeFor(acceptLanguage: string | undefined): string
  /**
   * The response variant for these caller roles in one of the app's locales,
   * rendered once and memoized by role-set key and locale: callers holding
   * the same roles of the app's granted ones share one variant (see
   * role-set.ts).
   */
  variant(callerRoles: readonly string[], locale: string): ShellVariant
}

/** One immutable view of the whole database; swapped whole on every reload. */
export interface Snapshot {
  /** Hash of the content alone: independent of row ids, row order and time. */
  readonly version: string
  readonly loadedAt: Date
  /** Every app's key, sorted as the inventory lists them. */
  readonly appKeys: readonly string[]
  /** `GET /api/v1/apps`, rendered at build time. */
  readonly appsInventory: RenderedBody
  app(appKey: string): AppView | undefined
}
