import type {
  AppRow,
  BrandingRow,
  GrantRow,
  MenuItemRow,
  SnapshotRows,
} from '../../src/db/snapshot-rows.js'
import { buildCaller, type Caller } from '../../src/snapshot/caller.js'
import type { AppView, ShellVariant, Snapshot } from '../../src/snapshot/types.js'

/** An app row with plausible defaults. */
export function appRow(appKey: string, fields: Partial<AppRow> = {}): AppRow {
  return {
    appKey,
    name: `App ${appKey}`,
    description: null,
    homeUrl: `/${appKey}`,
    defaultLocale: 'en',
    revision: null,
    ...fields,
  }
}

/** A branding row with every optional field unset. */
export function brandingRow(appKey: string, fields: Partial<BrandingRow> = {}): BrandingRow {
  return {
    appKey,
    productName: null,
    logoUrl: null,
    faviconUrl: null,
    primaryColor: null,
    accentColor: null,
    footerText: null,
    theme: {},
    ...fields,
  }
}

/** A top-level sidebar link of app `crm` whose label and href derive from its key. */
export function itemRow(
  id: string,
  itemKey: string,
  fields: Partial<MenuItemRow> = {},
): MenuItemRow {
  return {
    id,
    appKey: 'crm',
    itemKey,
    zone: 'sidebar',
    parentId: null,
    position: 0,
    kind: 'link',
    label: itemKey,
    icon: null,
    href: `/${itemKey}`,
    external: false,
    rolloutPercent: null,
    visibleFrom: null,
    visibleUntil: null,
    ...fields,
  }
}

export function grantRows(menuItemId: string, ...roles: string[]): GrantRow[] {
  return roles.map((role) => ({ menuItemId, role }))
}

/** Rows of app `crm` (with no branding row) unless told otherwise. */
export function snapshotRows(rows: Partial<SnapshotRows>): SnapshotRows {
  return { apps: [appRow('crm')], branding: [], menuItems: [], grants: [], labels: [], ...rows }
}

/** The full response body of a variant for a given user block. */
export function renderBody(variant: ShellVariant, user: unknown = null): string {
  return Buffer.concat([variant.head, Buffer.from(JSON.stringify(user)), variant.tail]).toString()
}

interface ItemJson {
  readonly id: string
  readonly children: readonly ItemJson[]
}

/** A zone's visible items as `a,b(c,d)`, compact enough to compare at a glance. */
export function outlineZone(variant: ShellVariant, zone = 'sidebar'): string {
  const body = JSON.parse(renderBody(variant)) as { menus: Record<string, ItemJson[]> }
  return outlineItems(body.menus[zone] ?? [])
}

function outlineItems(items: readonly ItemJson[]): string {
  return items
    .map((item) =>
      item.children.length === 0 ? item.id : `${item.id}(${outlineItems(item.children)})`,
    )
    .join(',')
}

/** The app's view, failing the test loudly when the snapshot lacks it. */
export function requireApp(snapshot: Snapshot, appKey: string): AppView {
  const view = snapshot.app(appKey)
  if (view === undefined) throw new Error(`app ${appKey} missing from the snapshot`)
  return view
}

/** A caller holding these roles (a rollout's bucket goes by `sub`). */
export function callerWith(roles: readonly string[], sub = 'test-user'): Caller {
  const sorted = [...roles].sort()
  return buildCaller({
    sub,
    username: null,
    name: null,
    email: null,
    roles: sorted,
    expiresAtMs: 0,
  })
}
