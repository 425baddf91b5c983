import type { Logger } from 'pino'

/**
 * Cleanups added as each resource is created (by service.ts, and the bench for what it starts),
 * run in reverse order by one `releaseAll()`, each even when an earlier one failed.
 */
export interface Releasers {
  add(name: string, release: () => unknown): void
  releaseAll(): Promise<void>
}

export function createReleasers(logger: Logger): Releasers {
  const stack: { name: string; release: () => unknown }[] = []
  let releasing: Promise<void> | undefined
  return {
    add(name, release) {
      stack.push({ name, release })
    },
    releaseAll() {
      releasing ??= (async () => {
        for (let entry = stack.pop(); entry !== undefined; entry = stack.pop()) {
          try {
            await entry.release()
            logger.debug({ resource: entry.name }, 'released')
          } catch (error) {
            logger.error({ err: error, resource: entry.name }, 'release failed')
          }
        }
      })()
      return releasing
    },
  }
}
