import type { VerifiedCaller } from '../auth/verify-token.js'
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
 * Most requests are a cached caller asking for the app it asked for last, so
 * each caller's last shell is remembered, its body joined and compressed
 * once: a repeat skips the audience, the variant lookup, the join and the
 * compression. Held weakly by caller, so an entry leaves with its token's
 * cache entry (the token cache bounds them), and dropped whole when the
 * snapshot changes, so it never keeps an old snapshot's views alive.
 */
export function createLastShellMemo(): LastShellLookup {
  let memoSnapshot: Snapshot | undefined
  let lastShells = new WeakMap<VerifiedCaller, LastShell>()
  return (snapshot, view, locale, caller) => {
    if (snapshot !== memoSnapshot) {
      memoSnapshot = snapshot
      lastShells = new WeakMap()
    }
    const last = lastShells.get(caller)
    if (last !== undefined && last.view === view && last.locale === locale) return last
    const variant = view.variant(caller, locale)
    const body = Buffer.concat([variant.head, caller.userBlock, variant.tail])
    const shell = {
      view,
      locale,
      coded: createCodedBody(body, `${variant.tag}.${caller.userTag}`, 'request'),
    }
    lastShells.set(caller, shell)
    return shell
  }
}
