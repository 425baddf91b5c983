import type { AppRow, BrandingRow } from '../db/snapshot-rows.js'
import { ZONES, type Zone } from '../domain/vocabulary.js'
import type { ContentItem } from './app-content.js'
import { contentTag } from './content-tag.js'
import type { Audience, MenuNode, ShellVariant, TaggedBody } from './types.js'

/** The `app` block of the shell response. */
export function renderAppJson(app: Omit<AppRow, 'revision'>): string {
  return JSON.stringify({
    key: app.appKey,
    name: app.name,
    description: app.description,
    homeUrl: app.homeUrl,
  })
}

/** One entry of the apps inventory: the `app` block, the default locale and every locale, sorted. */
export function renderInventoryEntryJson(
  appJson: string,
  defaultLocale: string,
  locales: readonly string[],
): string {
  return `${appJson.slice(0, -1)},"defaultLocale":${JSON.stringify(defaultLocale)},"locales":${JSON.stringify(locales)}}`
}

/** The `branding` block: present even without a branding row. */
export function renderBrandingJson(
  app: Pick<AppRow, 'name'>,
  branding: Omit<BrandingRow, 'appKey'> | null,
): string {
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

/**
 * An item's fields up to its children's opening, and where its label's JSON stands in them. One
 * JSON.stringify, so one flat string: snapshots hold tens of thousands.
 */
export function renderItemOpenJson(
  row: ContentItem,
): Pick<MenuNode, 'openJson' | 'labelStart' | 'labelEnd'> {
  const fields = JSON.stringify({
    id: row.itemKey,
    kind: row.kind,
    label: row.label,
    icon: row.icon,
    href: row.href,
    external: row.external,
    children: [],
  })
  // The keys before the label serialize exactly as they do inside `fields`.
  const labelStart =
    `{"id":${JSON.stringify(row.itemKey)},"kind":${JSON.stringify(row.kind)},"label":`.length
  const labelEnd = labelStart + JSON.stringify(row.label).length
  // `…"children":[]}` less its last two characters: a slice of one string, not a rope.
  return { openJson: fields.slice(0, -2), labelStart, labelEnd }
}

export interface RenderLocale {
  /** As the app stores it: the response's `locale`. */
  readonly locale: string
  /** Lowercased tags whose labels apply, longest first (`de-ch`, `de`); empty for the default. */
  readonly labelForms: readonly string[]
}

function renderVisibleNodes(
  nodes: readonly MenuNode[],
  audience: Audience,
  labelForms: readonly string[],
): string {
  let json = ''
  for (const node of nodes) {
    const nodeJson = renderVisibleNode(node, audience, labelForms)
    if (nodeJson === null) continue
    json = json === '' ? nodeJson : `${json},${nodeJson}`
  }
  return json
}

/** The item's fields with its label in the first of the forms it has one in, else the default. */
function openJsonIn(node: MenuNode, labelForms: readonly string[]): string {
  const labels = node.localizedLabels
  if (labels !== null) {
    for (const form of labelForms) {
      for (let index = 0; index < labels.length; index += 2) {
        if (labels[index] !== form) continue
        const { openJson, labelStart, labelEnd } = node
        return `${openJson.slice(0, labelStart)}${JSON.stringify(labels[index + 1])}${openJson.slice(labelEnd)}`
      }
    }
  }
  return node.openJson
}

/**
 * The item's JSON, or null when hidden: the caller holds none of its grants or is not in its
 * rollout, it is outside its window, or it is a grouping (no href) whose children are all hidden.
 */
function renderVisibleNode(
  node: MenuNode,
  audience: Audience,
  labelForms: readonly string[],
): string | null {
  if (node.grants.length > 0 && !node.grants.some((role) => audience.roles.has(role))) return null
  if (node.rolloutPercent !== null && !audience.rolledOut.has(node)) return null
  if (audience.outOfWindow.has(node)) return null
  const childrenJson = renderVisibleNodes(node.children, audience, labelForms)
  if (childrenJson === '' && !node.hasHref && node.children.length > 0) return null
  return `${openJsonIn(node, labelForms)}${childrenJson}]}`
}

/** `GET /api/v1/apps`: apps in the given order, and the tag of those bytes. */
export function renderAppsInventory(appJsons: readonly string[]): TaggedBody {
  const body = Buffer.from(`{"apps":[${appJsons.join(',')}]}`)
  return Object.freeze({ tag: contentTag(body), byteLength: body.length, bytes: () => body })
}

/**
 * One response variant: the app's shared head, then the tail, everything after the caller's
 * block (the menus this audience may see, in one locale), and the tag of both.
 */
export function renderShellVariant(
  head: Buffer,
  roots: ReadonlyMap<Zone, readonly MenuNode[]>,
  audience: Audience,
  locale: RenderLocale,
): ShellVariant {
  const zones = ZONES.map(
    (zone) =>
      `${JSON.stringify(zone)}:[${renderVisibleNodes(roots.get(zone) ?? [], audience, locale.labelForms)}]`,
  )
  const tail = Buffer.from(
    `,"menus":{${zones.join(',')}},"locale":${JSON.stringify(locale.locale)}}`,
  )
  // The head ends with `"user":` and the tail begins `,"menus"`: joined, the parts stay apart.
  return Object.freeze({ head, tail, tag: contentTag(Buffer.concat([head, tail])) })
}
