/**
 * One set of supported Node versions, named alike in package.json's
 * `engines`, the README, the Dockerfile and CI; and no installed package
 * wants another, so an install on any of them prints no EBADENGINE.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import semver from 'semver'
import t from 'tap'

const ROOT = new URL('../../', import.meta.url)
const read = (path: string) => readFile(new URL(path, ROOT), 'utf8')
const { engines } = JSON.parse(await read('package.json')) as { engines: { node: string } }
/** The lowest release of each supported line. */
const LOWEST = (semver.validRange(engines.node) ?? '')
  .split('||')
  .map((range) => semver.minVersion(range)?.version ?? '')

t.test('engines names supported lines, each with its lowest release', async (t) => {
  t.same(LOWEST, ['20.19.0', '22.12.0'])
  t.ok(semver.satisfies(process.version, engines.node), `this Node (${process.version}) is one`)
})

t.test('the README, the Dockerfile and CI say the same', async (t) => {
  const readme = await read('README.md')
  t.match(readme, /Node 20\.19 or later, or 22\.12 or later/)
  const images = [...(await read('Dockerfile')).matchAll(/^FROM node:(\d+\.\d+\.\d+)/gm)]
  t.ok(images.length > 0)
  for (const [, version = ''] of images) {
    t.ok(semver.satisfies(version, engines.node), `the image's Node ${version} is supported`)
  }
  t.match(await read('.ci/run'), /engines/, 'CI checks its Node against engines')
})

/** package.json of every installed package, nested ones too. */
async function* installedManifests(dir: string): AsyncGenerator<string> {
  let entries: string[]
  try {
    entries = await readdir(dir)
  } catch {
    return
  }
  for (const entry of entries) {
    if (entry.startsWith('.')) continue
    const path = join(dir, entry)
    if (entry.startsWith('@')) {
      yield* installedManifests(path)
      continue
    }
    yield join(path, 'package.json')
    yield* installedManifests(join(path, 'node_modules'))
  }
}

t.test('no installed package excludes a supported line (no EBADENGINE)', async (t) => {
  const refusing: string[] = []
  for await (const manifest of installedManifests(new URL('node_modules', ROOT).pathname)) {
    const text = await readFile(manifest, 'utf8').catch(() => null)
    if (text === null) continue
    const {
      name,
      version,
      engines: wanted,
    } = JSON.parse(text) as {
      name?: string
      version?: string
      engines?: { node?: string }
    }
    const range = wanted?.node
    if (range === undefined || semver.validRange(range) === null) continue
    for (const lowest of LOWEST) {
      if (!semver.satisfies(lowest, range)) refusing.push(`${name}@${version} wants ${range}`)
    }
  }
  t.same(refusing, [])
})
