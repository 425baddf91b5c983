import type { MenuItemRow } from '../db/snapshot-rows.js'
import type { Caller } from './caller.js'

/** One shown-or-hidden item, only what rendering needs: the loader's rows would double the heap. */
export interface MenuNode
  extends Pick<MenuItemRow, 'itemKey' | 'rolloutPercent' | 'visibleFrom' | 'visibleUntil'> {
  /** False for a pure grouping, which is dropped when none of its children is shown. */
  readonly hasHref: boolean
  /** Roles granted on the item, distinct and sorted; empty means every caller sees it. */
  readonly grants: readonly string[]
  readonly children: readonly MenuNode[]
  /** `{"id":…,"external":…,"children":[`: the item but its children, in the default locale. */
  readonly openJson: string
  /** Where the label's JSON stands in `openJson`: another locale's label replaces that span. */
  readonly labelStart: number
  readonly labelEnd: number
  /** Labels in other locales, flat (lowercased tag, label, …), as text; null when none. */
  readonly localizedLabels: readonly string[] | null
}

/**
 * One app's shell response for one audience and locale, split around the `user` block so the
 * caller's is spliced in without re-serializing: body = head + userBlock + tail.
 */
export interface ShellVariant {
  /** `{"app":{...},"branding":{...},"user":`, shared by all variants of the app. */
  readonly head: Buffer
  /** `,"menus":{...},"locale":"…"}` */
  readonly tail: Buffer
  /** Hash of head and tail; with the caller's tag, the ETag. */
  readonly tag: string
}

export interface AppView {
  readonly key: string
  /**
   * Names the app's content and which items are out of their windows: equal keys, equal views.
   * Kept instead of the view, so a view the bounded cache let go is not held alive (app-views.ts).
   */
  readonly viewKey: string
  /** The language of `menu_items.label`, as stored. */
  readonly defaultLocale: string
  /** The default locale and every locale of the app's labels, as stored, sorted. */
  readonly locales: readonly string[]
  /** The locale to answer in: RFC 4647 lookup of the caller's `Accept-Language` ranges. */
  localeFor(ranges: readonly string[]): string
  /** The caller's variant in one of the app's locales, rendered once per audience and locale. */
  variant(caller: Caller, locale: string): ShellVariant
}

/** One immutable view of the whole database; swapped whole on every reload. */
export interface Snapshot {
  /** Hash of the content alone: independent of row ids, row order and time. */
  readonly version: string
  readonly loadedAt: Date
  /** Every app's key, sorted as the inventory lists them. */
  readonly appKeys: readonly string[]
  /** `GET /api/v1/apps`, rendered at build time. */
  readonly appsInventory: TaggedBody
  /** The next window boundary (ms since the epoch), when it must be made again; null: none. */
  readonly nextChangeAt: number | null
  /** The app's view, made when first asked for; undefined: no such app. */
  app(appKey: string): AppView | undefined
  /** Every role granted on one of the app's items, sorted, known without making its view. */
  grantedRoles(appKey: string): readonly string[] | undefined
  /** The `viewKey` of the app's view, known without making the view; undefined: no such app. */
  viewKey(appKey: string): string | undefined
}

/** Where the snapshot in service was read: the database, or the file it was kept in. */
export type SnapshotOrigin = 'database' | 'file'

/** What the routes and the event streams read of the feed; undefined before the first load. */
export interface SnapshotSource {
  current(): Snapshot | undefined
  origin(): SnapshotOrigin | undefined
  /** Why there is no snapshot yet, for /readyz. */
  notReadyReason(): string
  /**
   * When the snapshot in service was last known to match the database (for the file's, the
   * file's confirmation), never before its loadedAt.
   */
  confirmedAt(): Date | undefined
  /** Called after every swap to a new snapshot; returns an unsubscribe function. */
  onSwap(listener: (snapshot: Snapshot) => void): () => void
}

/** A response body and its strong tag (no quotes), from the bytes alone: same on every instance. */
export interface TaggedBody {
  readonly tag: string
  readonly byteLength: number
  /** The bytes; a shell's are joined from their parts when first asked for. */
  bytes(): Buffer
}

/** Which of an app's items one caller may see; a variant is rendered per audience and locale. */
export interface Audience {
  /** The caller's roles among those the app grants anywhere. */
  readonly roles: ReadonlySet<string>
  /** Items with a rollout the caller is in. */
  readonly rolledOut: ReadonlySet<MenuNode>
  /** Items outside their window now: hidden, whoever asks. */
  readonly outOfWindow: ReadonlySet<MenuNode>
}
