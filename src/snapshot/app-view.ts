import type { LRUCache } from 'lru-cache'
import { ImmutableSet } from './immutable-set.js'
import type { MenuTrees } from './menu-tree.js'
import { renderShellVariant } from './render.js'
import { createRoleSetKeyFunction, intersectRoles } from './role-set.js'
import type { AppView, ShellVariant } from './types.js'

/**
 * Variants of every app, shared by successive snapshots, keyed by
 * `appKey + "\0" + app content hash + "\0" + roleSetKey`.
 */
export type VariantCache = LRUCache<string, ShellVariant>

/**
 * The request-time face of one app. Everything that does not depend on the
 * caller (the head, the trees, the fixed JSON of grant-free subtrees) is
 * ready; a variant is rendered on the first request of its role set.
 */
export function createAppView(
  appKey: string,
  head: Buffer,
  menus: MenuTrees,
  variants: VariantCache,
  /** Names this app's content in the variant cache, which outlives snapshots; ends with "\0". */
  cacheKeyPrefix: string,
): AppView {
  const grantedRoles: ReadonlySet<string> = new ImmutableSet(menus.grantedRoles)
  const roleSetKey = createRoleSetKeyFunction(grantedRoles)

  const variant = (callerRoles: readonly string[]): ShellVariant => {
    const key = roleSetKey(callerRoles)
    const cacheKey = cacheKeyPrefix + key
    const cached = variants.get(cacheKey)
    if (cached !== undefined) return cached
    const relevantRoles = new Set(intersectRoles(callerRoles, grantedRoles))
    const rendered = renderShellVariant(head, menus.roots, relevantRoles)
    variants.set(cacheKey, rendered)
    return rendered
  }

  return Object.freeze({ key: appKey, grantedRoles, variant })
}
