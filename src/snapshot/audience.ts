import { hash } from 'node:crypto'
import type { Caller } from './caller.js'
import type { MenuNode } from './types.js'

/**
 * The caller's bucket for a rollout item, 0 to 99 (docs/api.md, "Audiences"). The caller is in the
 * rollout below the percent, so raising the percent never hides the item from anyone who saw it.
 */
export function rolloutBucket(appKey: string, itemKey: string, sub: string): number {
  return hash('sha256', `${appKey}/${itemKey}/${sub}`, 'buffer').readUInt32BE(0) % 100
}

/** Whether the caller is in the item's rollout; a bucket ignores the percent, so it is cached. */
export function isInRollout(appKey: string, node: MenuNode, caller: Caller): boolean {
  if (node.rolloutPercent === null) return true
  const path = `${appKey}/${node.itemKey}`
  let bucket = caller.rolloutBuckets.get(path)
  if (bucket === undefined) {
    bucket = rolloutBucket(appKey, node.itemKey, caller.sub)
    caller.rolloutBuckets.set(path, bucket)
  }
  return bucket < node.rolloutPercent
}

/** Whether `at` (milliseconds since the epoch) is in the item's window: from <= at < until. */
export function isInWindow(
  node: Pick<MenuNode, 'visibleFrom' | 'visibleUntil'>,
  at: number,
): boolean {
  return (
    (node.visibleFrom === null || node.visibleFrom <= at) &&
    (node.visibleUntil === null || at < node.visibleUntil)
  )
}
