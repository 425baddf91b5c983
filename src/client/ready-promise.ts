import type { ShellClientError, ShellFailure, ShellState } from './shell-types.js'

/** The client's `ready`: settled from outside, never reported as an unhandled rejection. */
export function createReady() {
  let settle = { resolve: (_state: ShellState) => {}, reject: (_error: Error) => {} }
  const promise = new Promise<ShellState>((resolve, reject) => {
    settle = { resolve, reject }
  })
  // Nobody has to await it: a rejection no one listens to must not be reported as unhandled.
  promise.catch(() => {})
  return { promise, ...settle }
}

/** What `ready` rejects with when the client stops without a shell. */
export function createError(failure: ShellFailure): ShellClientError {
  return Object.assign(new Error(failure.detail), { status: failure.status })
}
