import { readFileSync } from 'node:fs'
import t from 'tap'
import { SERVICE_PORT } from './service-port.js'

/**
 * The Dockerfile and .dockerignore, read as text: no Docker engine is needed
 * (and none is assumed). What the image must be: a pinned LTS base, a
 * runtime stage with production dependencies only and no PostgreSQL, a
 * non-root user, node as PID 1.
 */

const ROOT = new URL('../../', import.meta.url)

interface Instruction {
  readonly keyword: string
  readonly args: string
}

/** Instructions grouped by stage (each starts with FROM); continuation lines joined, comments dropped. */
function parseDockerfile(text: string): Instruction[][] {
  const stages: Instruction[][] = []
  let pending = ''
  for (const line of text.split('\n')) {
    const trimmed = line.trim()
    if (trimmed.startsWith('#') || (trimmed === '' && pending === '')) continue
    pending = `${pending} ${trimmed}`.trim()
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1)
      continue
    }
    const [keyword = '', ...rest] = pending.split(/\s+/)
    pending = ''
    const instruction = { keyword: keyword.toUpperCase(), args: rest.join(' ') }
    if (instruction.keyword === 'FROM') stages.push([])
    const stage = stages.at(-1)
    if (stage === undefined) throw new Error(`${instruction.keyword} before the first FROM`)
    stage.push(instruction)
  }
  return stages
}

function argsOf(stage: readonly Instruction[], keyword: string): string[] {
  return stage.filter((instruction) => instruction.keyword === keyword).map((i) => i.args)
}

/** `ENV A=1 B=2` (the form this Dockerfile uses) as a map. */
function envOf(stage: readonly Instruction[]): Map<string, string> {
  const env = new Map<string, string>()
  for (const args of argsOf(stage, 'ENV')) {
    for (const pair of args.split(/\s+/)) {
      const [name = '', ...value] = pair.split('=')
      env.set(name, value.join('=').replace(/^"(.*)"$/, '$1'))
    }
  }
  return env
}

const stages = parseDockerfile(readFileSync(new URL('Dockerfile', ROOT), 'utf8'))
const runtime = stages.at(-1) ?? []

t.test('multi-stage, every base image pinned to an exact version', async (t) => {
  t.ok(stages.length >= 2, 'a build stage and a runtime stage')
  for (const stage of stages) {
    const [from = ''] = argsOf(stage, 'FROM')
    const image = from.split(/\s+/)[0] ?? ''
    t.notMatch(image, /:latest\b/, `${image} is not latest`)
    t.match(image, /^node:\d+\.\d+\.\d+-[a-z0-9-]+(@sha256:[0-9a-f]{64})?$/, `${image} is pinned`)
    // Even majors are the LTS lines.
    t.equal(Number(image.match(/^node:(\d+)/)?.[1]) % 2, 0, `${image} is an LTS line`)
  }
  const images = new Set(stages.map((stage) => argsOf(stage, 'FROM')[0]?.split(/\s+/)[0]))
  t.equal(images.size, 1, 'build and runtime on the same base')
})

t.test('the runtime stage holds production dependencies only, without PostgreSQL', async (t) => {
  const build = stages[0] ?? []
  const runs = argsOf(build, 'RUN')
  const install = runs.find((args) => /\bnpm ci\b/.test(args)) ?? ''
  t.match(install, /--ignore-scripts\b/, 'no `prepare` build before the sources are copied')
  const prune = runs.find((args) => /\bnpm prune\b/.test(args)) ?? ''
  t.match(prune, /--omit=dev\b/)
  const steps = runs.join('\n')
  const built = steps.indexOf('npm run build')
  t.ok(built >= 0 && steps.indexOf('npm prune') > built, 'built, then pruned')
  t.same(
    argsOf(runtime, 'RUN').filter((args) => /\bnpm (ci|install)\b/.test(args)),
    [],
    'nothing installed in the runtime stage',
  )
  const copies = argsOf(runtime, 'COPY')
  t.ok(
    copies.some((args) => /^--from=\S+ \S*node_modules\/? \S*node_modules\/?$/.test(args)),
    'node_modules/ from the build',
  )
  t.ok(
    copies.some((args) => /^--from=\S+ \S*dist\/? \S*dist\/?$/.test(args)),
    'dist/ from the build',
  )
  t.ok(
    copies.some((args) => /^sql\/? /.test(args)),
    'sql/',
  )
  t.ok(
    copies.some((args) => /^seeds\/? /.test(args)),
    'seeds/',
  )
})

t.test('the runtime stage listens on every interface of the container, as non-root', async (t) => {
  const env = envOf(runtime)
  t.equal(env.get('HOST'), '0.0.0.0')
  t.equal(env.get('PORT'), String(SERVICE_PORT))
  t.same(argsOf(runtime, 'EXPOSE'), [String(SERVICE_PORT)])
  const user = argsOf(runtime, 'USER').at(-1) ?? 'root'
  const userName = user.split(':')[0]
  t.notOk(userName === 'root' || userName === '0', `USER ${user} is not root`)
})

t.test('node is PID 1, never npm', async (t) => {
  const commands = argsOf(runtime, 'CMD')
  t.equal(commands.length, 1)
  t.same(JSON.parse(commands[0] ?? 'null'), ['node', 'dist/main.js'])
  t.same(argsOf(runtime, 'ENTRYPOINT'), [], "the base image's entrypoint execs the command")
})

t.test('.dockerignore keeps local state and installed packages out of the context', async (t) => {
  const ignored = readFileSync(new URL('.dockerignore', ROOT), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  for (const entry of ['node_modules', '.data', 'dist', '.git']) {
    t.ok(ignored.includes(entry), `${entry} is ignored`)
  }
  for (const needed of ['src', 'sql', 'seeds', 'package.json', 'package-lock.json']) {
    t.notOk(ignored.includes(needed), `${needed} reaches the build`)
  }
})
