/**
 * Everything the benchmark starts registers its stop here the moment it
 * exists; `run` stops them in reverse order, each even when an earlier one
 * failed, once, whether the run ended, failed or was interrupted.
 */
export interface Cleanup {
  add(name: string, release: () => unknown): void
  run(): Promise<void>
}

export function createCleanup(log: (line: string) => void): Cleanup {
  const stack: { name: string; release: () => unknown }[] = []
  let running: Promise<void> | undefined
  return {
    add(name, release) {
      stack.push({ name, release })
    },
    run() {
      running ??= (async () => {
        for (let entry = stack.pop(); entry !== undefined; entry = stack.pop()) {
          try {
            await entry.release()
          } catch (error) {
            log(`cleanup of ${entry.name} failed: ${String(error)}`)
          }
        }
      })()
      return running
    },
  }
}
