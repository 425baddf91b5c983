/**
 * Polls for a background effect (a reload, a recovery) without betting on
 * how long it takes; throws, naming what it waited for, once `timeoutMs`
 * pass. `what` may be a function, to say what was seen at that moment.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) {
      const described = typeof what === 'string' ? what : what()
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}`)
    }
    await sleep(10)
  }
}

/** A pause that is part of what a test does (a quiet period), never a stand-in for a condition. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
