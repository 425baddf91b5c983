import type { Logger } from 'pino'
import type { LocalIssuer } from './auth/local-issuer.js'
import type { SnapshotFeed } from './feed/snapshot-feed.js'
import type { Snapshot } from './snapshot/types.js'

/** Every role granted anywhere: the demo user sees every item. */
function collectGrantedRoles(snapshot: Snapshot): string[] {
  const roles = new Set<string>()
  for (const key of snapshot.appKeys)
    for (const role of snapshot.grantedRoles(key) ?? []) roles.add(role)
  return [...roles].sort()
}

/**
 * Local mode: once the first snapshot is in, one line with a ready-to-paste `curl` (a token for a
 * demo user who holds every role granted in the data) and the preview page's address.
 */
export function logDemoCurlOnFirstSnapshot(
  feed: SnapshotFeed,
  issuer: LocalIssuer,
  url: string,
  logger: Logger,
): void {
  const unsubscribe = feed.onSwap((snapshot) => {
    unsubscribe()
    const [firstApp] = snapshot.appKeys
    const path = firstApp === undefined ? '/api/v1/apps' : `/api/v1/shell/${firstApp}`
    const roles = collectGrantedRoles(snapshot)
    issuer
      .signToken({
        sub: 'demo-user',
        username: 'demo',
        name: 'Demo User',
        email: 'demo@example.com',
        roles,
        ttlSeconds: 8 * 3600,
      })
      .then((token) => {
        const curl = `curl -H 'Authorization: Bearer ${token}' ${url}${path}`
        const preview = `${url}/`
        logger.info(
          { curl, preview, roles },
          `local mode ready; try: ${curl} or open the preview page at ${preview}`,
        )
      })
      .catch((error: unknown) => logger.error({ err: error }, 'cannot sign the demo token'))
  })
}
