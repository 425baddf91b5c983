import type { Caller } from './caller.js'
import type { AppView, TaggedBody } from './types.js'

/**
 * The one place a shell response is made: the caller's variant of the app
 * in the locale (rendered once per audience and locale, then taken from the
 * variant cache), with the caller's user block between its head and tail.
 * Its tag joins the variant's tag and the user block's, both made ahead of
 * time, so the same bytes get the same tag on every instance and nothing is
 * hashed per request; the bytes are joined only when someone needs them.
 * The shell route sends it and the event stream sends its tag, so the two
 * cannot disagree.
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
