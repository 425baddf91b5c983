/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): the functions with
 * the most self time, and the same time grouped by package or source file.
 * `node --import tsx bench/profile-summary.ts FILE.cpuprofile [TOP]`
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Profiles with less busy time than this (1 s) get a heading only. */
const MIN_BUSY_US = 1_000_000
/** Idle and bookkeeping entries: they are time the process did not spend on work. */
const NOT_WORK = new Set(['(idle)', '(program)', '(root)'])

export async function summarizeProfile(file: string, top = 25): Promise<string> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, index) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  const totalUs = profile.endTime - profile.startTime
  let idleUs = 0
  const byFunction = new Map<string, number>()
  const byGroup = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) continue
    const name = frame.functionName || '(anonymous)'
    if (NOT_WORK.has(name)) {
      if (name === '(idle)') idleUs += us
      continue
    }
    const where = frame.url === '' ? '' : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
    const key = `${name}${where}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + us)
    const group = groupOf(frame.url, name)
    byGroup.set(group, (byGroup.get(group) ?? 0) + us)
  }
  const busyUs = [...byFunction.values()].reduce((sum, us) => sum + us, 0)
  const heading = `${file.split('/').slice(-2).join('/')}: ${(totalUs / 1e6).toFixed(1)} s profiled, ${(idleUs / 1e6).toFixed(1)} s idle, ${(busyUs / 1e6).toFixed(1)} s busy`
  // The module loader's thread and other near-idle threads: one line is enough.
  if (busyUs < MIN_BUSY_US) return `${heading} (not summarized)`
  const lines = [
    `${heading} (% below are of the busy time)`,
    '',
    'self time by package / file:',
    ...rank(byGroup, busyUs, 15),
    '',
    `top ${top} functions by self time:`,
    ...rank(byFunction, busyUs, top),
    '',
    `top ${top} functions by total time (self plus callees; recursion counted once):`,
    ...rank(inclusiveByFunction(profile, byId, selfUs), busyUs, top),
  ]
  return lines.join('\n')
}

/** Total time under each function, each sample counted once per function however deep it recurses. */
function inclusiveByFunction(
  profile: CpuProfile,
  byId: Map<number, ProfileNode>,
  selfUs: Map<number, number>,
): Map<string, number> {
  const totals = new Map<string, number>()
  const root = profile.nodes[0]
  if (root === undefined) return totals
  const onStack = new Map<string, number>()
  const visit = (node: ProfileNode): number => {
    const name = node.callFrame.functionName || '(anonymous)'
    const key = NOT_WORK.has(name)
      ? null
      : `${name}${node.callFrame.url === '' ? '' : ` ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`}`
    if (key !== null) onStack.set(key, (onStack.get(key) ?? 0) + 1)
    let total = name === '(idle)' || name === '(program)' ? 0 : (selfUs.get(node.id) ?? 0)
    for (const childId of node.children ?? []) {
      const child = byId.get(childId)
      if (child !== undefined) total += visit(child)
    }
    if (key !== null) {
      const depth = onStack.get(key) ?? 1
      if (depth === 1) totals.set(key, (totals.get(key) ?? 0) + total)
      onStack.set(key, depth - 1)
    }
    return total
  }
  visit(root)
  return totals
}

function rank(entries: Map<string, number>, totalUs: number, limit: number): string[] {
  return [...entries]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(
      ([key, us]) =>
        `  ${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`,
    )
}

function shortUrl(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const nodeModules = path.lastIndexOf('node_modules/')
  if (nodeModules >= 0) return path.slice(nodeModules + 'node_modules/'.length)
  const dist = path.lastIndexOf('/dist/')
  if (dist >= 0) return path.slice(dist + 1)
  return path
}

/** `node:internal/...` and natives by name, packages by name, our files by path. */
function groupOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return 'node: core'
  const short = shortUrl(url)
  if (url.includes('node_modules/')) {
    const parts = short.split('/')
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? short)
  }
  return short
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, top] = process.argv.slice(2)
  if (file === undefined) throw new Error('usage: profile-summary.ts FILE.cpuprofile [TOP]')
  process.stdout.write(`${await summarizeProfile(file, Number(top ?? 25))}\n`)
}
