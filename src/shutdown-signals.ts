/** What main.ts makes of SIGTERM and SIGINT: one shutdown, and a way out of it. */

export type ShutdownSignal = 'SIGTERM' | 'SIGINT'

/**
 * `shutdown`: the first signal. `copy`: the same signal again within
 * SAME_SIGNAL_WINDOW_MS of the first, which is the same request (below).
 * `second`: any other signal after the first: the operator wants out now.
 */
export type SignalMeaning = 'shutdown' | 'copy' | 'second'

/**
 * A signal sent to a process group (a terminal's Ctrl-C, `kill -- -PGID`,
 * a container runtime stopping `npm start`) reaches the service and npm,
 * and npm passes it on to the service: the same signal twice within
 * milliseconds. A second of slack covers a loaded machine; an operator who
 * means a second signal sends it later.
 */
export const SAME_SIGNAL_WINDOW_MS = 1_000

/** Only SIGTERM waits SHUTDOWN_DELAY_S: SIGINT is a person at a terminal, not a load balancer's client. */
export function delayFor(signal: ShutdownSignal, shutdownDelayS: number): number {
  return signal === 'SIGTERM' ? shutdownDelayS * 1000 : 0
}

/** Tells each signal's meaning from the ones before it; `now` in milliseconds, monotonic. */
export function createSignalClassifier(
  now: () => number = () => performance.now(),
): (signal: ShutdownSignal) => SignalMeaning {
  let first: { readonly signal: ShutdownSignal; readonly atMs: number } | undefined
  return (signal) => {
    const atMs = now()
    if (first === undefined) {
      first = { signal, atMs }
      return 'shutdown'
    }
    return signal === first.signal && atMs - first.atMs < SAME_SIGNAL_WINDOW_MS ? 'copy' : 'second'
  }
}
