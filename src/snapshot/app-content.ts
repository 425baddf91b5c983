import type { AppRow, BrandingRow, MenuItemRow } from '../db/snapshot-rows.js'
import type { MenuKind, Zone } from '../domain/vocabulary.js'

/**
 * One app's content without row ids or row order: items a root leads to, in display order, each
 * after its parent (pre-order), so equal content is equal JSON on every instance.
 */
export interface AppContent {
  readonly app: Omit<AppRow, 'revision'>
  readonly branding: Omit<BrandingRow, 'appKey'> | null
  readonly items: readonly ContentItem[]
}

export interface ContentItem extends Omit<MenuItemRow, 'id' | 'appKey' | 'parentId'> {
  /** Its parent's index in `items` (always lower); -1 for a root. */
  readonly parent: number
  /** Granted roles, distinct and sorted. */
  readonly roles: readonly string[]
  /** Labels in other locales as stored, flat (locale, label, locale, label, …), sorted by locale. */
  readonly labels: readonly string[]
}

/*
 * Arrays, not objects: a fifth of the bytes, over thousands of apps. Changing a tuple changes
 * every app's hash and the snapshot file's bytes: test/snapshot-file/file-layout.test.ts fails
 * until snapshot-file/file-format.ts's version moves.
 */
type AppTuple = [
  appKey: string,
  name: string,
  description: string | null,
  homeUrl: string | null,
  defaultLocale: string,
  branding: BrandingTuple | null,
  items: ItemTuple[],
]
type BrandingTuple = [
  productName: string | null,
  logoUrl: string | null,
  faviconUrl: string | null,
  primaryColor: string | null,
  accentColor: string | null,
  footerText: string | null,
  theme: unknown,
]
export type ItemTuple = [
  itemKey: string,
  zone: Zone,
  parent: number,
  position: number,
  kind: MenuKind,
  label: string,
  icon: string | null,
  href: string | null,
  external: boolean,
  rolloutPercent: number | null,
  visibleFrom: number | null,
  visibleUntil: number | null,
  roles: readonly string[],
  labels: readonly string[],
]

export function encodeItem(
  row: MenuItemRow,
  parent: number,
  roles: readonly string[],
  labels: readonly string[],
): ItemTuple {
  return [
    row.itemKey,
    row.zone,
    parent,
    row.position,
    row.kind,
    row.label,
    row.icon,
    row.href,
    row.external,
    row.rolloutPercent,
    row.visibleFrom,
    row.visibleUntil,
    roles,
    labels,
  ]
}

/** The content's canonical JSON, its items in display order. */
export function encodeAppContent(
  app: Omit<AppRow, 'revision'>,
  branding: Omit<BrandingRow, 'appKey'> | undefined,
  items: ItemTuple[],
): string {
  const tuple: AppTuple = [
    app.appKey,
    app.name,
    app.description,
    app.homeUrl,
    app.defaultLocale,
    branding === undefined
      ? null
      : [
          branding.productName,
          branding.logoUrl,
          branding.faviconUrl,
          branding.primaryColor,
          branding.accentColor,
          branding.footerText,
          branding.theme ?? null,
        ],
    items,
  ]
  return JSON.stringify(tuple)
}

/** The content back from JSON this service encoded (a snapshot's or its file's). */
export function decodeAppContent(json: Buffer | string): AppContent {
  const [appKey, name, description, homeUrl, defaultLocale, branding, items] = JSON.parse(
    json.toString(),
  ) as AppTuple
  return {
    app: { appKey, name, description, homeUrl, defaultLocale },
    branding:
      branding === null
        ? null
        : {
            productName: branding[0],
            logoUrl: branding[1],
            faviconUrl: branding[2],
            primaryColor: branding[3],
            accentColor: branding[4],
            footerText: branding[5],
            theme: branding[6],
          },
    items: items.map((item) => ({
      itemKey: item[0],
      zone: item[1],
      parent: item[2],
      position: item[3],
      kind: item[4],
      label: item[5],
      icon: item[6],
      href: item[7],
      external: item[8],
      rolloutPercent: item[9],
      visibleFrom: item[10],
      visibleUntil: item[11],
      roles: item[12],
      labels: item[13],
    })),
  }
}
