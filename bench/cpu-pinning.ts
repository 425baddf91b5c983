import { spawnSync } from 'node:child_process'
import { availableParallelism } from 'node:os'

/**
 * The measured servers on the first core, the load generator on the second,
 * when `taskset` (util-linux) is there and the machine has two cores. Left
 * to the scheduler, two identical servers measured A B A B differed by 10 to
 * 15 % by where they happened to run (the first one started ran faster, in
 * either order); pinned, by 2 to 5 %. Everything else (PostgreSQL, the
 * benchmark itself) is left where the scheduler puts it.
 */
const canPin =
  availableParallelism() >= 2 &&
  spawnSync('taskset', ['-V'], { encoding: 'utf8' }).error === undefined

/** The command and arguments that run `command` on `cpu`: itself when it cannot be pinned. */
export function pinTo(
  cpu: 'server' | 'load',
  command: string,
  args: readonly string[],
): [string, string[]] {
  if (!canPin) return [command, [...args]]
  return ['taskset', ['--cpu-list', cpu === 'server' ? '0' : '1', command, ...args]]
}

/** What the run says of where it ran. */
export const PINNING_DESCRIPTION = canPin
  ? 'servers on CPU 0, the load generator on CPU 1 (taskset)'
  : 'not pinned (taskset missing or one core)'
