import { contentTag } from './content-tag.js'

/**
 * The snapshot's version from each app's hash, in app key order: a hash of the content as it is,
 * not only as shown (a grant, or a branding row equal to the fallback, counts). An app's hash is
 * its content's tag (app-content.ts), which names items by key and places them by tree order,
 * so row ids, row order and load time never change it.
 */
export function computeSnapshotVersion(appHashes: readonly string[]): string {
  return contentTag(appHashes.join(','))
}
