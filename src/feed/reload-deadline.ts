/**
 * The read, or a RELOAD_TIMEOUT error once `ms` have passed. The read itself
 * cannot be stopped (its connection is silent); it is left to settle, and
 * ignored, while the next attempt takes another connection of the pool.
 */
export function withReloadDeadline<T>(read: Promise<T>, ms: number): Promise<T> {
  read.catch(() => {})
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          Object.assign(new Error(`the database did not answer the reload within ${ms} ms`), {
            code: 'RELOAD_TIMEOUT',
          }),
        ),
      ms,
    )
  })
  return Promise.race([read, deadline]).finally(() => clearTimeout(timer))
}
