/** What main.ts makes of SIGTERM and SIGINT: one shutdown, and a way out of it. */

export type ShutdownSignal = 'SIGTERM' | 'SIGINT'

/**
 * A signal to a process group (Ctrl-C, `kill -- -PGID`, a runtime stopping `npm start`) reaches
 * the service and npm, which passes it on: the same signal twice within milliseconds. A second
 * of slack covers a loaded machine; an operator who means a second signal sends it later.
 */
export const SAME_SIGNAL_WINDOW_MS = 1_000

/** Only SIGTERM waits SHUTDOWN_DELAY_S: SIGINT is a person at a terminal, not a load balancer's client. */
export function delayFor(signal: ShutdownSignal, shutdownDelayS: number): number {
  return signal === 'SIGTERM' ? shutdownDelayS * 1000 : 0
}

/**
 * Tells each signal's meaning from the ones before it (`now` in monotonic milliseconds): the
 * first is `shutdown`; the same again within SAME_SIGNAL_WINDOW_MS a `copy`; any other after
 * it `second`: the operator wants out now.
 */
export function createSignalClassifier(
  now: () => number = () => performance.now(),
): (signal: ShutdownSignal) => 'shutdown' | 'copy' | 'second' {
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
