import { LRUCache } from 'lru-cache'
import { compareCodeUnits } from '../domain/vocabulary.js'
import { type ContentItem, decodeAppContent } from './app-content.js'
import type { AppRecord } from './app-record.js'
import { localesByLowercase } from './app-record.js'
import { createAppView } from './app-view.js'
import { isInWindow } from './audience.js'
import { buildMenuTrees } from './menu-tree.js'
import { renderAppJson, renderBrandingJson, renderShellHead } from './render.js'
import type { AppView } from './types.js'
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

export function createAppViews(variants: VariantCache, maxViews = MAX_VIEWS): AppViews {
  const views = new LRUCache<string, AppView>({ max: maxViews })
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

function* labelLocalesOf(items: readonly ContentItem[]): Iterable<string> {
  for (const { labels } of items) {
    for (let index = 0; index < labels.length; index += 2) yield labels[index] as string
  }
}

function makeView(record: AppRecord, key: string, at: number, variants: VariantCache): AppView {
  const { app, branding, items } = decodeAppContent(record.content)
  const menus = buildMenuTrees(items, app.defaultLocale)
  const head = renderShellHead(renderAppJson(app), renderBrandingJson(app, branding))
  const appLocales = {
    defaultLocale: app.defaultLocale,
    byLowercase: localesByLowercase(app.defaultLocale, labelLocalesOf(items)),
  }
  const outOfWindow = new Set(menus.windowed.filter((node) => !isInWindow(node, at)))
  return createAppView(app.appKey, head, menus, appLocales, variants, key, outOfWindow)
}
