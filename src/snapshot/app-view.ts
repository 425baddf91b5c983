import { compareCodeUnits } from '../domain/vocabulary.js'
import { isInRollout } from './audience.js'
import type { Caller } from './caller.js'
import { lookUpLocale, truncationsOf } from './locale-lookup.js'
import type { MenuTrees } from './menu-tree.js'
import { type RenderLocale, renderShellVariant } from './render.js'
import type { AppView, MenuNode, ShellVariant } from './types.js'
import type { VariantCache } from './variant-cache.js'

/** The app's languages: the default, and every locale of its labels, as stored. */
export interface AppLocales {
  readonly defaultLocale: string
  /** Every locale by lowercased tag, the default included. */
  readonly byLowercase: ReadonlyMap<string, string>
}

/**
 * One app's request-time face at one time (which items are in their windows): the caller-free
 * parts are ready; a variant is rendered on its audience's and locale's first request, then cached.
 */
export function createAppView(
  appKey: string,
  head: Buffer,
  menus: MenuTrees,
  appLocales: AppLocales,
  variants: VariantCache,
  /** Names the app's content and window state in the cache (it outlives snapshots); ends "\0". */
  viewKey: string,
  /** The items outside their window now; the view is made again when that changes. */
  outOfWindow: ReadonlySet<MenuNode>,
): AppView {
  const { grantedRoles, rollouts } = menus
  const { defaultLocale, byLowercase } = appLocales
  const defaultLowercase = defaultLocale.toLowerCase()
  const renderLocales = new Map<string, RenderLocale>()
  for (const locale of byLowercase.values()) {
    const lowercase = locale.toLowerCase()
    renderLocales.set(locale, {
      locale,
      // The default locale's labels are menu_items.label, which every other locale falls back to.
      labelForms:
        lowercase === defaultLowercase
          ? []
          : truncationsOf(lowercase).filter((form) => form !== defaultLowercase),
    })
  }
  const localeFor = (ranges: readonly string[]): string =>
    // One locale: nothing to choose, whatever the caller prefers.
    byLowercase.size === 1 ? defaultLocale : lookUpLocale(ranges, byLowercase, defaultLocale)

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
    localeFor,
    variant,
  })
}
