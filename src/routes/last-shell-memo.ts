import { LRUCache } from 'lru-cache'
import type { VerifiedCaller } from '../auth/verified-caller.js'
import { type CodedBody, createCodedBody } from '../http/coded-body.js'
import type { AppView, Snapshot } from '../snapshot/types.js'

/** What a caller was last sent: the app's view, the locale, and the body with its codings. */
export interface LastShell {
  readonly view: AppView
  readonly locale: string
  /**
   * The variant's head, the caller's user block and the variant's tail,
   * joined once, tagged with the variant's tag and the caller's; its codings
   * are made on the first request that accepts each, and kept here.
   */
  readonly coded: CodedBody
}

/** Looks up, or computes and remembers, the caller's shell of one app in one locale and snapshot. */
export type LastShellLookup = (
  snapshot: Snapshot,
  view: AppView,
  locale: string,
  caller: VerifiedCaller,
) => LastShell

/**
 * Bytes of joined shell bodies, codings included, kept for whoever asks for
 * them next: a seed app's body with its brotli coding weighs about 3 KB, so
 * some 10,000 of them, as many as the token cache holds callers by default.
 */
export const SHELL_BODIES_MAX_BYTES = 32 * 1024 * 1024
/** Charged per body besides its bytes: the key, the tags, the objects, the cache's bookkeeping. */
const BODY_OVERHEAD_BYTES = 512

/**
 * Most requests are a cached caller asking for the app it asked for last, so
 * each caller's last shell is remembered: a repeat skips the audience, the
 * variant lookup, the join and the compression. Held weakly by caller, so an
 * entry leaves with its token's cache entry (the token cache bounds them),
 * and dropped whole when the snapshot changes, so it never keeps an old
 * snapshot's views alive.
 *
 * Behind it, the bodies themselves, keyed by their tag (the variant's and
 * the user's, so by their bytes) and bounded by the bytes they hold: a token
 * refresh, or a reload that left the app's variant as it was, finds the
 * body joined and compressed already.
 */
export function createLastShellMemo(maxBytes = SHELL_BODIES_MAX_BYTES): LastShellLookup {
  let memoSnapshot: Snapshot | undefined
  let lastShells = new WeakMap<VerifiedCaller, LastShell>()
  const bodies = new LRUCache<string, CodedBody>({
    maxSize: maxBytes,
    sizeCalculation: chargeOf,
  })
  // A coding made later makes the body heavier: charge it again, if it is
  // still cached (setting the same value again would keep the old charge).
  const recharge = (tag: string) => (coded: CodedBody) => {
    if (bodies.peek(tag) !== coded) return
    bodies.delete(tag)
    bodies.set(tag, coded)
  }
  return (snapshot, view, locale, caller) => {
    if (snapshot !== memoSnapshot) {
      memoSnapshot = snapshot
      lastShells = new WeakMap()
    }
    const last = lastShells.get(caller)
    if (last !== undefined && last.view === view && last.locale === locale) return last
    const variant = view.variant(caller, locale)
    const tag = `${variant.tag}.${caller.userTag}`
    let coded = bodies.get(tag)
    if (coded === undefined) {
      const body = Buffer.concat([variant.head, caller.userBlock, variant.tail])
      coded = createCodedBody(body, tag, 'request', recharge(tag))
      bodies.set(tag, coded)
    }
    const shell = { view, locale, coded }
    lastShells.set(caller, shell)
    return shell
  }
}

function chargeOf(coded: CodedBody): number {
  return coded.bytes + BODY_OVERHEAD_BYTES
}
