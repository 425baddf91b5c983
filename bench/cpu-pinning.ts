import { execFile, spawnSync } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/**
 * During a comparison, the two servers compared run on the first core and
 * wrk on the second, when `taskset` (util-linux) is there and the machine
 * has two cores. Left to the scheduler, two identical servers measured
 * A B A B differed by 10 to 15 % by where they happened to run (the one
 * started first ran faster, in either order); pinned, by 2 to 5 %. Only
 * during comparisons: pinned, a server's GC threads share its core, which
 * slows what the other scenarios time (reloads of a large snapshot).
 */
const canPin =
  availableParallelism() >= 2 &&
  spawnSync('taskset', ['-V'], { encoding: 'utf8' }).error === undefined
const SERVER_CPU = '0'
const LOAD_CPU = '1'
const ALL_CPUS = `0-${availableParallelism() - 1}`

/** The command and arguments that run the load generator on its core: itself when it cannot be pinned. */
export function pinLoadGenerator(command: string, args: readonly string[]): [string, string[]] {
  return canPin ? ['taskset', ['--cpu-list', LOAD_CPU, command, ...args]] : [command, [...args]]
}

/** Runs `work` with the processes (every thread of each) on the servers' core, then lets them go. */
export async function withServersPinned<T>(
  pids: readonly number[],
  work: () => Promise<T>,
): Promise<T> {
  if (!canPin) return work()
  const setAffinity = (cpus: string) =>
    Promise.all(
      pids.map((pid) =>
        execFileAsync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)]),
      ),
    )
  await setAffinity(SERVER_CPU)
  try {
    return await work()
  } finally {
    await setAffinity(ALL_CPUS)
  }
}

/** What the run says of where it ran. */
export const PINNING_DESCRIPTION = canPin
  ? 'in comparisons, the servers on CPU 0 and the load generator on CPU 1 (taskset)'
  : 'not pinned (taskset missing or one core)'
