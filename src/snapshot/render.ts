import { contentTag } from '../content-tag.js'
import { ZONES, type Zone } from '../vocabulary.js'
import type {
  AppRow,
  BrandingRow,
  MenuItemRow,
  MenuNode,
  RenderedBody,
  ShellVariant,
} from './types.js'

/** The `app` block of the shell response and one entry of the apps inventory. */
export function renderAppJson(app: AppRow): string {
  return JSON.stringify({
    key: app.appKey,
    name: app.name,
    description: app.description,
    homeUrl: app.homeUrl,
  })
}

/**
 * The `branding` block: always present, even without a branding row, and
 * the product name falls back to the app's name whenever it is not set.
 */
export function renderBrandingJson(app: AppRow, branding: BrandingRow | undefined): string {
  return JSON.stringify({
    productName: branding?.productName ?? app.name,
    logoUrl: branding?.logoUrl ?? null,
    faviconUrl: branding?.faviconUrl ?? null,
    primaryColor: branding?.primaryColor ?? null,
    accentColor: branding?.accentColor ?? null,
    footerText: branding?.footerText ?? null,
    theme: branding?.theme ?? {},
  })
}

/** Everything of the shell response up to the caller's block; the same for every caller of an app. */
export function renderShellHead(appJson: string, brandingJson: string): Buffer {
  return Buffer.from(`{"app":${appJson},"branding":${brandingJson},"user":`)
}

/** An item's own fields, keys in response order, up to the opening of its children. */
export function renderItemOpenJson(row: MenuItemRow): string {
  const fields = JSON.stringify({
    id: row.itemKey,
    kind: row.kind,
    label: row.label,
    icon: row.icon,
    href: row.href,
    external: row.external,
  })
  return `${fields.slice(0, -1)},"children":[`
}

/** Everything of the shell response after the caller's block: the menus this role set may see. */
export function renderShellTail(
  roots: ReadonlyMap<Zone, readonly MenuNode[]>,
  callerRoles: ReadonlySet<string>,
): Buffer {
  const zones = ZONES.map(
    (zone) => `${JSON.stringify(zone)}:[${renderVisibleNodes(roots.get(zone) ?? [], callerRoles)}]`,
  )
  return Buffer.from(`,"menus":{${zones.join(',')}}}`)
}

function renderVisibleNodes(nodes: readonly MenuNode[], callerRoles: ReadonlySet<string>): string {
  let json = ''
  for (const node of nodes) {
    const nodeJson = renderVisibleNode(node, callerRoles)
    if (nodeJson === null) continue
    json = json === '' ? nodeJson : `${json},${nodeJson}`
  }
  return json
}

/**
 * The item's JSON, or null when the caller may not see it: it has grants and
 * the caller holds none of them, or it is a pure grouping (no href) whose
 * children are all hidden. Hiding an item hides its whole subtree.
 */
function renderVisibleNode(node: MenuNode, callerRoles: ReadonlySet<string>): string | null {
  if (node.grants.length > 0 && !node.grants.some((role) => callerRoles.has(role))) return null
  if (node.fixedJson !== null) return node.fixedJson
  const childrenJson = renderVisibleNodes(node.children, callerRoles)
  if (childrenJson === '' && !node.hasHref && node.children.length > 0) return null
  return `${node.openJson}${childrenJson}]}`
}

/** `GET /api/v1/apps`: apps in the given order, with a strong ETag over the bytes. */
export function renderAppsInventory(appJsons: readonly string[]): RenderedBody {
  const body = Buffer.from(`{"apps":[${appJsons.join(',')}]}`)
  return Object.freeze({ body, etag: `"${contentTag(body)}"` })
}

/** One response variant: the app's shared head, this role set's menus, and their tag. */
export function renderShellVariant(
  head: Buffer,
  roots: ReadonlyMap<Zone, readonly MenuNode[]>,
  callerRoles: ReadonlySet<string>,
): ShellVariant {
  const tail = renderShellTail(roots, callerRoles)
  return Object.freeze({ head, tail, tag: contentTag(head, tail) })
}
