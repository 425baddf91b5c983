import type { MenuKind, Zone } from '../domain/vocabulary.js'

/** One row of `shell.apps`, with its revision (sql/008_revision_ids.sql). */
export interface AppRow {
  readonly appKey: string
  readonly name: string
  readonly description: string | null
  readonly homeUrl: string | null
  /** The language of `menu_items.label`; a language tag. */
  readonly defaultLocale: string
  /** Moves with every committed change of the app; null for an app written around the triggers. */
  readonly revision: string | null
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
  /** The share of callers who see it (0 to 100); null: every caller its roles admit. */
  readonly rolloutPercent: number | null
  /** Its window, in milliseconds since the epoch: shown when from <= now < until; null: unbounded. */
  readonly visibleFrom: number | null
  readonly visibleUntil: number | null
}

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

/** The rows of some apps (or all), as one consistent state of the database. */
export interface SnapshotRows {
  readonly apps: readonly AppRow[]
  readonly branding: readonly BrandingRow[]
  readonly menuItems: readonly MenuItemRow[]
  readonly grants: readonly GrantRow[]
  readonly labels: readonly LabelRow[]
}
