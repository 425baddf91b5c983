import { spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'

/** The open-files limit of a process: soft (enforced) and hard (the most it may raise itself to). */
export interface FileLimit {
  readonly soft: number
  readonly hard: number
}

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux that Node supports. */
const TICKS_PER_SECOND = 100

/** Resident memory from /proc/PID/status (VmRSS), in bytes. */
export async function readRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
  if (kib === undefined) throw new Error(`/proc/${pid}/status: no VmRSS`)
  return Number(kib) * 1024
}

export async function readFileLimit(pid: number | 'self'): Promise<FileLimit> {
  const limits = await readFile(`/proc/${pid}/limits`, 'utf8')
  const [, soft = '', hard = ''] = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits) ?? []
  const parse = (text: string) => (text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text))
  return { soft: parse(soft), hard: parse(hard) }
}

/**
 * Makes room for `needed` open files in this process, and so in the children
 * it starts from now on, which inherit the limit. Node raises its soft limit
 * to the hard one at start, so only a hard limit below `needed` is left: that
 * takes `prlimit` with CAP_SYS_RESOURCE (root, usually), which is tried;
 * `npm run bench` cannot raise it any other way. Returns the limit in force.
 */
export async function raiseFileLimit(needed: number): Promise<FileLimit> {
  const before = await readFileLimit('self')
  if (before.soft >= needed) return before
  const hard = Math.max(before.hard, needed)
  spawnSync('prlimit', [`--pid=${process.pid}`, `--nofile=${needed}:${hard}`], { stdio: 'ignore' })
  return readFileLimit('self')
}

/** User plus system time of a process so far, all threads; NaN without /proc. */
export async function readCpuSeconds(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces; utime and stime are fields 14 and 15 of proc(5).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return Number.NaN
  }
}
