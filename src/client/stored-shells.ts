/**
 * The stored shells: the last shell of each caller, service, app and
 * languages, in a Web Storage across page loads; at most MAX_ENTRIES of them
 * in one storage, and all of them removed by `clearStoredShells` when a user
 * signs out.
 */
import type { ListedStorage, Shell, ShellStorage } from './shell-types.js'

/** Every entry of this module, of any format: what `clearStoredShells` removes. */
const MODULE_PREFIX = 'shell-data:'
/** Versioned, so that a later client with another format reads none of this one's entries. */
const ENTRY_PREFIX = `${MODULE_PREFIX}v1:`
/**
 * A stored shell older than this is dropped rather than shown: a week covers a
 * weekend and a short leave, and a frame that old has likely changed.
 */
const MAX_AGE_MS = 604_800_000 // 7 days: written as one number, which minifies shorter
/**
 * Entries in one storage: a page's apps, languages and the few users of a
 * shared machine fit, and a storage (5 MB in most browsers) is never filled
 * by shells of people long gone.
 */
const MAX_ENTRIES = 20

/** A shell in storage, with its tag and when the service last confirmed it. */
export interface StoredShell {
  readonly shell: Shell
  readonly etag: string
  readonly savedAt: number
}

export interface StoredShells {
  /** The caller's stored shell, unless it is too old or not theirs. */
  read(sub: string): StoredShell | null
  /** Keeps the shell under its user's key, making room first. */
  write(shell: Shell, etag: string): void
  drop(sub: string): void
}

/**
 * The stored shells of one service, app and languages (`scope`). A storage that
 * throws (quota, private mode) or holds garbage counts as none.
 */
export function openStoredShells(storage: ShellStorage | null, scope: string): StoredShells {
  const keyOf = (sub: string) => `${ENTRY_PREFIX}${scope}|${hashSub(sub)}`
  return {
    read(sub) {
      try {
        const text = storage?.getItem(keyOf(sub))
        if (text == null) return null
        const stored = JSON.parse(text) as StoredShell
        // The owner check makes the hash's collisions harmless: never another user's shell.
        if (Date.now() - stored.savedAt < MAX_AGE_MS && stored.shell.user.sub === sub) return stored
        storage?.removeItem(keyOf(sub))
      } catch {}
      return null
    },
    write(shell, etag) {
      try {
        if (storage === null) return
        const key = keyOf(shell.user.sub)
        makeRoom(storage, key)
        storage.setItem(key, JSON.stringify({ shell, etag, savedAt: Date.now() }))
      } catch {}
    },
    drop(sub) {
      try {
        storage?.removeItem(keyOf(sub))
      } catch {}
    },
  }
}

/**
 * Removes every shell any client of this module stored in `storage`, whoever's:
 * for a page to call when its user signs out, so that nothing of them (name,
 * e-mail, roles) stays on a shared machine. Default: `localStorage`.
 */
export function clearStoredShells(storage: ListedStorage | null = findLocalStorage()): void {
  try {
    if (storage !== null)
      for (const key of listKeys(storage, MODULE_PREFIX)) storage.removeItem(key)
  } catch {}
}

/** `localStorage` where there is one; reading it throws in some sandboxed frames. */
export function findLocalStorage(): (ShellStorage & ListedStorage) | null {
  try {
    return globalThis.localStorage ?? null
  } catch {
    return null
  }
}

/**
 * Drops the expired entries, then the oldest, so that once `key` is written
 * the storage holds at most MAX_ENTRIES. A storage that cannot list its keys
 * is left as it is.
 */
function makeRoom(storage: ShellStorage, key: string): void {
  if (storage.key === undefined) return
  const unexpired: [savedAt: number, key: string][] = []
  for (const other of listKeys(storage as ListedStorage, ENTRY_PREFIX)) {
    if (other === key) continue
    let savedAt = 0
    try {
      savedAt = (JSON.parse(String(storage.getItem(other))) as StoredShell).savedAt
    } catch {}
    if (Date.now() - savedAt < MAX_AGE_MS) unexpired.push([savedAt, other])
    else storage.removeItem(other)
  }
  unexpired.sort((a, b) => b[0] - a[0])
  for (const [, oldest] of unexpired.slice(MAX_ENTRIES - 1)) storage.removeItem(oldest)
}

/** The keys that start with `prefix`, listed before any is removed (removing renumbers them). */
function listKeys(storage: ListedStorage, prefix: string): string[] {
  const keys: string[] = []
  for (let index = 0; index < storage.length; index += 1) {
    const key = storage.key(index)
    if (key?.startsWith(prefix)) keys.push(key)
  }
  return keys
}

/**
 * 32 bits of FNV-1a over the user id, so that storage keys do not spell it
 * out. Not SHA-256: the first state needs the key at once, and crypto.subtle
 * only answers later. A collision cannot show another user's shell (a stored
 * shell is shown only when its `user.sub` is the caller's); at worst two
 * users of one machine take turns in one entry.
 */
function hashSub(text: string): string {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index += 1) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193)
  }
  return (hash >>> 0).toString(36)
}
