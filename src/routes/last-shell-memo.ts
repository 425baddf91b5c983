import type { VerifiedCaller } from '../auth/verify-token.js'
import type { AppView, Snapshot } from '../snapshot/types.js'

/** What a caller was last sent: the app's view, the locale, the whole body and its ETag. */
export interface LastShell {
  readonly view: AppView
  readonly locale: string
  /** The variant's head, the caller's user block and the variant's tail, joined once. */
  readonly body: Buffer
  /** Strong ETag, quotes included: the variant's tag and the caller's. */
  readonly etag: string
}

/**
 * Looks up, or computes and remembers, the caller's shell of one app in one
 * locale and snapshot. `remember: false` computes it without looking up or
 * remembering.
 */
export type LastShellLookup = (
  snapshot: Snapshot,
  view: AppView,
  locale: string,
  caller: VerifiedCaller,
  options?: { readonly remember: boolean },
) => LastShell

/**
 * Most requests are a cached caller asking for the app it asked for last, so
 * each caller's last shell is remembered, its body joined once: a repeat
 * skips the role-set key, the variant lookup, the join and the ETag string.
 * Held weakly by caller, so an entry leaves with its token's cache entry, and
 * dropped whole when the snapshot changes, so it never keeps an old
 * snapshot's views alive. A caller verified by this very request is not
 * remembered: in a flood of new tokens most never come back, and each entry
 * would cost its insert and the collector's weak-map work; its next request,
 * a cache hit, remembers it.
 */
export function createLastShellMemo(): LastShellLookup {
  let memoSnapshot: Snapshot | undefined
  let lastShells = new WeakMap<VerifiedCaller, LastShell>()
  return (snapshot, view, locale, caller, options) => {
    if (options?.remember === false) return shellOf(view, locale, caller)
    if (snapshot !== memoSnapshot) {
      memoSnapshot = snapshot
      lastShells = new WeakMap()
    }
    const last = lastShells.get(caller)
    if (last !== undefined && last.view === view && last.locale === locale) return last
    const shell = shellOf(view, locale, caller)
    lastShells.set(caller, shell)
    return shell
  }
}

function shellOf(view: AppView, locale: string, caller: VerifiedCaller): LastShell {
  const variant = view.variant(caller, locale)
  return {
    view,
    locale,
    body: Buffer.concat([variant.head, caller.userBlock, variant.tail]),
    etag: `"${variant.tag}.${caller.userTag}"`,
  }
}
