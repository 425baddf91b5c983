import type { Caller } from './caller.js'
import type { AppView, TaggedBody } from './types.js'

/**
 * The one place a shell response is made, so the route's ETag and the event stream's agree: its
 * tag joins two made ahead of time, so nothing is hashed per request; bytes are joined on demand.
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
