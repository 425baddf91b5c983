/**
 * The client's state as its subscribers see it: the first, each next one
 * handed to every listener, and `ready`, the first with a shell.
 */
import type { ShellClientError, ShellFailure, ShellListener, ShellState } from './shell-types.js'

export const INITIAL_STATE: ShellState = Object.freeze({
  shell: null,
  etag: null,
  source: null,
  live: false,
  stale: false,
  error: null,
})

/** A listener that throws is reported as any event listener's error is, and the others still run. */
export function callListener(listener: ShellListener, state: ShellState): void {
  try {
    listener(state)
  } catch (error) {
    queueMicrotask(() => {
      throw error
    })
  }
}

/** The client's `ready`: settled from outside, never reported as an unhandled rejection. */
export function createReady() {
  const ready = {} as {
    promise: Promise<ShellState>
    resolve(state: ShellState): void
    reject(error: Error): void
  }
  ready.promise = new Promise((resolve, reject) => Object.assign(ready, { resolve, reject }))
  // Nobody has to await it: a rejection no one listens to must not be reported as unhandled.
  ready.promise.catch(() => {})
  return ready
}

/** What `ready` rejects with when the client stops without a shell. */
export function createError(failure: ShellFailure): ShellClientError {
  return Object.assign(new Error(failure.detail), { status: failure.status })
}
