import { LRUCache } from 'lru-cache'
import { compareCodeUnits } from '../domain/vocabulary.js'
import { decodeAppContent } from './app-content.js'
import { type AppRecord, localesByLowercase } from './app-record.js'
import { isInRollout, isInWindow } from './audience.js'
import type { Caller } from './caller.js'
import { lookUpLocale, truncationsOf } from './locale-lookup.js'
import { buildMenuTrees } from './menu-tree.js'
import {
  type RenderLocale,
  renderAppJson,
  renderBrandingJson,
  renderShellHead,
  renderShellVariant,
} from './render.js'
import type { AppView, ShellVariant } from './types.js'
import type { VariantCache } from './variant-cache.js'

/**
 * The views of the apps asked for lately, shared by successive snapshots and bounded: a
 * snapshot keeps each app as its content's bytes (app-record.ts), and its view (menu trees,
 * item JSON, locales: some 35 KB on the heap for an app of 40 items) is made when a request asks.
 */
export interface AppViews {
  /** The record's view at `at` (ms since the epoch), whose key is `viewKey(record, at)`. */
  viewOf(record: AppRecord, viewKey: string, at: number): AppView
  /** Forgets a view no snapshot has any more, and its variants. */
  drop(viewKey: string): void
}

/**
 * Views kept: the apps in use at once on an instance. Making one again costs its content's parse
 * and its trees (bench/README.md, "scale": an app of 41 items, well under a millisecond). What
 * remembers a view (a caller's last shell, an event stream) keeps its `viewKey`, not the view, so
 * this bounds the views alive, and a view made again is never a second copy of one still held.
 */
export const MAX_VIEWS = 500

export function createAppViews(variants: VariantCache): AppViews {
  const views = new LRUCache<string, AppView>({ max: MAX_VIEWS })
  return {
    viewOf(record, viewKey, at) {
      let view = views.get(viewKey)
      if (view === undefined) {
        view = makeView(record, viewKey, at, variants)
        views.set(viewKey, view)
      }
      return view
    },
    drop(viewKey) {
      views.delete(viewKey)
      variants.dropPrefix(viewKey)
    },
  }
}

/**
 * Names the app's content and which of its items are out of their windows at `at`: equal keys,
 * equal views. Item keys hold no comma, so "," and "\0" keep the parts apart.
 */
export function viewKey(record: AppRecord, at: number): string {
  if (record.windows.length === 0) return record.contentKey
  const hidden = record.windows.filter((window) => !isInWindow(window, at))
  return `${record.contentKey}${hidden
    .map((window) => window.itemKey)
    .sort(compareCodeUnits)
    .join(',')}\0`
}

/** The next instant after `at` one of the record's windows opens or closes; null: none ahead. */
export function nextWindowChange(record: AppRecord, at: number): number | null {
  let next: number | null = null
  for (const { visibleFrom, visibleUntil } of record.windows) {
    for (const instant of [visibleFrom, visibleUntil]) {
      if (instant !== null && instant > at && (next === null || instant < next)) next = instant
    }
  }
  return next
}

/**
 * The app's request-time face at `at` (which items are in their windows): the caller-free parts
 * are made now; a variant is rendered on its audience's and locale's first request, then cached
 * under `viewKey`, which names the content and window state (the cache outlives snapshots).
 */
function makeView(record: AppRecord, viewKey: string, at: number, variants: VariantCache): AppView {
  const { app, branding, items } = decodeAppContent(record.content)
  const { appKey, defaultLocale } = app
  const menus = buildMenuTrees(items, defaultLocale)
  const { grantedRoles, rollouts } = menus
  const head = renderShellHead(renderAppJson(app), renderBrandingJson(app, branding))
  const labelLocales = items.flatMap(({ labels }) => labels.filter((_, index) => index % 2 === 0))
  const byLowercase = localesByLowercase(defaultLocale, labelLocales)
  const outOfWindow = new Set(menus.windowed.filter((node) => !isInWindow(node, at)))
  const defaultLowercase = defaultLocale.toLowerCase()
  const renderLocales = new Map<string, RenderLocale>()
  for (const [lowercase, locale] of byLowercase) {
    renderLocales.set(locale, {
      locale,
      // The default locale's labels are menu_items.label, which every other locale falls back to.
      labelForms:
        lowercase === defaultLowercase
          ? []
          : truncationsOf(lowercase).filter((form) => form !== defaultLowercase),
    })
  }

  const variant = (caller: Caller, locale: string): ShellVariant => {
    // Callers with the same of the app's granted roles and rollouts see the same menus. Roles
    // come sorted from the token and rollouts in item-key order, so the key is canonical.
    const relevantRoles = caller.roles.filter((role) => grantedRoles.has(role))
    const rolledOut = rollouts.filter((node) => isInRollout(appKey, node, caller))
    const rolloutMask = rollouts.map((node) => (rolledOut.includes(node) ? '1' : '0')).join('')
    const cacheKey = `${viewKey}${JSON.stringify(relevantRoles)}\0${rolloutMask}\0${locale}`
    const cached = variants.get(cacheKey)
    if (cached !== undefined) return cached
    const renderLocale = renderLocales.get(locale)
    if (renderLocale === undefined) throw new RangeError(`"${locale}" is not a locale of ${appKey}`)
    const audience = { roles: new Set(relevantRoles), rolledOut: new Set(rolledOut), outOfWindow }
    const rendered = renderShellVariant(head, menus.roots, audience, renderLocale)
    variants.set(cacheKey, viewKey, rendered)
    return rendered
  }

  return Object.freeze({
    key: appKey,
    viewKey,
    defaultLocale,
    locales: Object.freeze([...byLowercase.values()].sort(compareCodeUnits)),
    // One locale: nothing to choose, whatever the caller prefers.
    localeFor: (ranges: readonly string[]) =>
      byLowercase.size === 1 ? defaultLocale : lookUpLocale(ranges, byLowercase, defaultLocale),
    variant,
  })
}
