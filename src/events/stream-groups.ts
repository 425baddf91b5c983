import type { PassThrough } from 'node:stream'
import type { VerifiedCaller } from '../auth/verify-token.js'
import { haveSameItems } from '../db/vocabulary.js'
import type { AppView, ShellVariant, Snapshot } from '../snapshot/types.js'

/** A caller's open stream on one app. */
export interface EventStream {
  /** The body of the stream's reply: what is written here goes to the client. */
  readonly output: PassThrough
  readonly caller: VerifiedCaller
  /** Kept to choose the locale again when the app's languages change. */
  readonly acceptLanguage: string | undefined
  group: StreamGroup
  ended: boolean
}

/**
 * Streams of one app whose callers see the same variant (same relevant
 * roles, same locale): one tag comparison serves them all. Any member's
 * roles stand for the group.
 */
export interface StreamGroup {
  readonly appKey: string
  /**
   * The group's key among its app's groups; its tag is the one the group's
   * streams were last sent (a stream's ETag is the tag + "." + its user tag).
   */
  readonly variant: ShellVariant
  readonly locale: string
  readonly roles: readonly string[]
  readonly streams: Set<EventStream>
}

interface AppStreams {
  /** The view the groups were formed under; changes are compared against it. */
  view: AppView
  groups: Map<ShellVariant, StreamGroup>
}

/** What a change means for one stream; the caller writes it. */
export interface StreamChanges {
  /** The stream's variant tag moved: it gets a shell event. */
  shell(stream: EventStream, variantTag: string): void
  /** Its app was deleted: it gets `gone`, then ends. */
  gone(stream: EventStream): void
}

export interface StreamGroups {
  /**
   * The group a new stream of `caller` joins on the app, as `snapshot` has
   * it; the app's streams are brought in step with the snapshot first, so
   * the new stream joins them there. The caller adds the stream to it.
   */
  groupFor(
    appKey: string,
    snapshot: Snapshot,
    caller: VerifiedCaller,
    acceptLanguage: string | undefined,
  ): StreamGroup
  leave(stream: EventStream): void
  /** Brings every app's streams to `snapshot`: only apps whose view changed are looked at. */
  sync(snapshot: Snapshot): void
  /** Every stream, in no particular order. */
  streams(): Iterable<EventStream>
  readonly isEmpty: boolean
  clear(): void
}

/**
 * Open streams by app and by variant: which streams share a tag, and which
 * of them a new snapshot changes. Writes nothing itself; `changes` hears what
 * each stream is to be sent.
 */
export function createStreamGroups(changes: StreamChanges): StreamGroups {
  const apps = new Map<string, AppStreams>()

  function groupIn(
    entry: AppStreams,
    appKey: string,
    variant: ShellVariant,
    locale: string,
    roles: readonly string[],
  ): StreamGroup {
    let group = entry.groups.get(variant)
    if (group === undefined) {
      group = { appKey, variant, locale, roles, streams: new Set() }
      entry.groups.set(variant, group)
    }
    return group
  }

  /** Brings one app's streams to its view in `snapshot`: events where tags moved, `gone` if deleted. */
  function syncApp(appKey: string, entry: AppStreams, snapshot: Snapshot): void {
    const view = snapshot.app(appKey)
    if (view === entry.view) return
    const previousGroups = [...entry.groups.values()]
    if (view === undefined) {
      apps.delete(appKey)
      for (const group of previousGroups) for (const stream of group.streams) changes.gone(stream)
      return
    }
    const languagesChanged = !haveSameItems(entry.view.locales, view.locales)
    const rolesChanged = !haveSameItems(
      [...entry.view.grantedRoles].sort(),
      [...view.grantedRoles].sort(),
    )
    entry.view = view
    entry.groups = new Map()
    for (const group of previousGroups) {
      if (languagesChanged || rolesChanged) {
        // Callers who shared a variant may not any more: each stream finds its group again.
        for (const stream of group.streams) {
          const locale = languagesChanged ? view.localeFor(stream.acceptLanguage) : group.locale
          const variant = view.variant(stream.caller.roles, locale)
          stream.group = groupIn(entry, appKey, variant, locale, stream.caller.roles)
          stream.group.streams.add(stream)
          if (variant.tag !== group.variant.tag) changes.shell(stream, variant.tag)
        }
        continue
      }
      const variant = view.variant(group.roles, group.locale)
      const next = groupIn(entry, appKey, variant, group.locale, group.roles)
      for (const stream of group.streams) {
        if (variant.tag !== group.variant.tag) changes.shell(stream, variant.tag)
        stream.group = next
        next.streams.add(stream)
      }
    }
  }

  return {
    groupFor(appKey, snapshot, caller, acceptLanguage) {
      const view = snapshot.app(appKey)
      if (view === undefined) throw new Error(`no app "${appKey}"`)
      const existing = apps.get(appKey)
      if (existing !== undefined) syncApp(appKey, existing, snapshot)
      const entry = apps.get(appKey) ?? { view, groups: new Map<ShellVariant, StreamGroup>() }
      apps.set(appKey, entry)
      const locale = view.localeFor(acceptLanguage)
      return groupIn(entry, appKey, view.variant(caller.roles, locale), locale, caller.roles)
    },

    leave(stream) {
      const { group } = stream
      group.streams.delete(stream)
      if (group.streams.size > 0) return
      const entry = apps.get(group.appKey)
      // A regrouped app has new groups; this one is no longer in its map.
      if (entry?.groups.get(group.variant) !== group) return
      entry.groups.delete(group.variant)
      if (entry.groups.size === 0) apps.delete(group.appKey)
    },

    sync(snapshot) {
      for (const [appKey, entry] of apps) syncApp(appKey, entry, snapshot)
    },

    *streams() {
      for (const entry of apps.values())
        for (const group of entry.groups.values()) yield* group.streams
    },

    get isEmpty() {
      return apps.size === 0
    },

    clear() {
      apps.clear()
    },
  }
}
