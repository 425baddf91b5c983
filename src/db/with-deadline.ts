/**
 * The promise, or a READ_TIMEOUT error after `ms`, when `onExpired` runs too: a connection gone
 * silent is ended there. The work cannot be stopped (its connection is silent): it is left to
 * settle, ignored, while the next attempt takes another connection.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, onExpired?: () => void): Promise<T> {
  work.catch(() => {})
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpired?.()
      const message = `the database did not answer within ${Math.round(ms)} ms`
      reject(Object.assign(new Error(message), { code: 'READ_TIMEOUT' }))
    }, ms)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}
