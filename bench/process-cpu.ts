import { readFile } from 'node:fs/promises'

/** USER_HZ: the unit of /proc/<pid>/stat times; 100 on every Linux Node supports. */
const TICKS_PER_SECOND = 100

/**
 * CPU time (user + system, seconds) a process has used so far, from
 * /proc/<pid>/stat; null where there is no /proc. Sampled around a leg it
 * tells which process was the bottleneck: a server near 100% of one core is
 * saturated, a load generator near 100% means the numbers are its limit.
 */
export async function readCpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses; the fields follow the last ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // Fields 14 and 15 of proc(5) (utime, stime) are 12 and 13 after the name.
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

/**
 * Starts a measurement of several processes; `stop` returns each one's share
 * of a core in %, and `other`: the machine's busy time that none of them
 * used (other people's builds and tests on a shared machine, the hypervisor's
 * steal), which tells a disturbed leg from a clean one.
 */
export async function startCpuMeter(pids: Record<string, number>) {
  const startedAt = performance.now()
  const before = await readAll(pids)
  const machineBefore = await readMachineBusySeconds()
  return {
    async stop(): Promise<Record<string, number | null>> {
      const after = await readAll(pids)
      const machineAfter = await readMachineBusySeconds()
      const elapsedS = (performance.now() - startedAt) / 1000
      const share = (start: number | null | undefined, end: number | null | undefined) =>
        start == null || end == null ? null : Math.round((1000 * (end - start)) / elapsedS) / 10
      const shares: Record<string, number | null> = {}
      for (const name of Object.keys(pids)) shares[name] = share(before[name], after[name])
      const machine = share(machineBefore, machineAfter)
      const ours = Object.values(shares).reduce<number>((sum, value) => sum + (value ?? 0), 0)
      shares.other = machine === null ? null : Math.max(0, Math.round(machine - ours))
      return shares
    },
  }
}

async function readAll(pids: Record<string, number>): Promise<Record<string, number | null>> {
  const entries = await Promise.all(
    Object.entries(pids).map(async ([name, pid]) => [name, await readCpuSeconds(pid)] as const),
  )
  return Object.fromEntries(entries)
}

/** Busy CPU time of the whole machine so far (seconds over all cores), from /proc/stat. */
export async function readMachineBusySeconds(): Promise<number | null> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? ''
    const ticks = line.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
    const total = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0)
    return (total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

/**
 * Between legs every process of the benchmark is idle, so the machine's busy
 * time is other people's. Waits (in half-second looks, at most `maxWaitMs`)
 * until it falls under `maxBusyPercent` of one core; returns the last look.
 */
export async function waitForQuietMachine(
  maxBusyPercent: number,
  maxWaitMs: number,
): Promise<number | null> {
  const deadline = performance.now() + maxWaitMs
  for (;;) {
    const before = await readMachineBusySeconds()
    const startedAt = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 500))
    const after = await readMachineBusySeconds()
    if (before === null || after === null) return null
    const busy = Math.round((100 * (after - before)) / ((performance.now() - startedAt) / 1000))
    if (busy <= maxBusyPercent || performance.now() >= deadline) return busy
  }
}
