/**
 * Role-set keys. Two callers whose roles intersect an app's granted roles in
 * the same set see exactly the same menus, so that intersection, and nothing
 * else of the caller's roles, names the response variant.
 *
 * The caller's roles arrive de-duplicated and sorted (the auth layer
 * guarantees it), so a single pass in their order yields a canonical key
 * without sorting on the hot path. Unsorted or repeated input still renders
 * the right menus; it only costs extra cache entries.
 */

/** Separator of the plain key form: readable in logs and metrics, e.g. `crm-admin,crm-sales`. */
const ROLE_SEPARATOR = ','

export type RoleSetKeyFunction = (callerRoles: readonly string[]) => string

/**
 * Returns the key function of one app. Keys are the intersection joined with
 * ",", unless some granted role of the app is empty or contains ","; such an
 * app (never seen in practice) uses the JSON array of the intersection
 * instead, so that two different intersections can never share a key. Keys
 * are only compared within one app, so the two forms never meet.
 */
export function createRoleSetKeyFunction(grantedRoles: ReadonlySet<string>): RoleSetKeyFunction {
  if (grantedRoles.size === 0) return () => ''
  for (const role of grantedRoles) {
    if (role === '' || role.includes(ROLE_SEPARATOR)) {
      return (callerRoles) => JSON.stringify(intersectRoles(callerRoles, grantedRoles))
    }
  }
  return (callerRoles) => joinGrantedRoles(callerRoles, grantedRoles)
}

/** The caller's roles that the app grants anywhere, in the caller's order. */
export function intersectRoles(
  callerRoles: readonly string[],
  grantedRoles: ReadonlySet<string>,
): string[] {
  const relevant: string[] = []
  for (const role of callerRoles) {
    if (grantedRoles.has(role)) relevant.push(role)
  }
  return relevant
}

function joinGrantedRoles(
  callerRoles: readonly string[],
  grantedRoles: ReadonlySet<string>,
): string {
  // Concatenation instead of intersect-then-join: no array on the hot path.
  let key: string | undefined
  for (const role of callerRoles) {
    if (!grantedRoles.has(role)) continue
    key = key === undefined ? role : key + ROLE_SEPARATOR + role
  }
  return key ?? ''
}
