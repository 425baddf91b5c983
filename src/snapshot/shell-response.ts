import type { Caller } from './caller.js'
import type { AppView, TaggedBody } from './types.js'

/**
 * The one place a shell response is made: the caller's variant with its user block between head
 * and tail. Its tag joins two made ahead of time, so equal bytes get equal tags on every instance
 * and nothing is hashed per request; the bytes are joined only when needed. The shell route
 * sends it and the event stream its tag, so the two cannot disagree.
 */
export function buildShellResponse(view: AppView, caller: Caller, locale: string): TaggedBody {
  const { head, tail, tag } = view.variant(caller, locale)
  const user = caller.userBlock
  return {
    tag: `${tag}.${caller.userTag}`,
    byteLength: head.length + user.length + tail.length,
    bytes: () => Buffer.concat([head, user, tail]),
  }
}
