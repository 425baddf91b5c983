import type { StandingQueue } from '../../src/http/standing-queue.js'

/**
 * A standing queue that a test switches on itself, so that the shedding's answers are tested
 * over real HTTP without a load; the rule's own timing is tested on a fake clock
 * (test/http/standing-queue.test.ts).
 */
export interface ForcedShedding extends StandingQueue {
  /** Runs `work` with every API request shed. */
  whileShedding(work: () => Promise<void>): Promise<void>
}

export function createForcedShedding(): ForcedShedding {
  let standing = false
  return {
    recordTurn() {},
    shouldShed: () => standing,
    isStanding: () => standing,
    async whileShedding(work) {
      standing = true
      try {
        await work()
      } finally {
        standing = false
      }
    },
  }
}
