import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib'
import t from 'tap'
import { httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'
import { PACKAGE_ROOT } from '../helpers/service-process.js'

/**
 * `GET /client/v1/shell-client.js` and `/client/v1/shell-frame.js` over real
 * HTTP (CONTRACT.md, section 13): the built modules as they are, minified,
 * each naming its source map, which is served beside it; public, cacheable
 * for five minutes, readable from any origin, compressed as the API's bodies
 * are with a strong tag per coding, and absent from the OpenAPI document.
 * Local mode serves them too: test/client/preview-frame.test.ts.
 */

const MODULES = ['shell-client.js', 'shell-frame.js']
/** Where `npm run build:client` puts what is served: the minified modules and their maps. */
const SERVED_DIR = 'dist/client/served'
/** The largest a module may weigh once `gzip -9` compresses it (CONTRACT.md 13). */
const MAX_GZIP_BYTES = 3_500
const CHROMIUM_ACCEPT_ENCODING = 'gzip, deflate, br, zstd'

const { url } = await startTestService(t, {
  logs: createLogCapture(),
  // With CORS on for the API, the modules still answer every origin.
  env: { CORS_ORIGINS: 'https://portal.example.com' },
})

for (const name of MODULES) {
  t.test(`${name}: the built module, public and cacheable`, async (t) => {
    const built = await readFile(join(PACKAGE_ROOT, SERVED_DIR, name))
    const response = await httpRequest(url, `/client/v1/${name}`, {
      headers: { origin: 'https://elsewhere.example.org' },
    })
    t.equal(response.status, 200)
    t.ok(response.body.equals(built), 'the bytes npm run build made')
    t.equal(response.headers['content-type'], 'text/javascript; charset=utf-8')
    t.equal(response.headers['cache-control'], 'public, max-age=300')
    t.equal(response.headers['access-control-allow-origin'], '*', 'any origin may load it')
    t.notOk(response.headers['access-control-allow-credentials'])
    t.equal(response.headers.vary, 'Accept-Encoding')
    t.equal(response.headers['content-encoding'], undefined, 'no Accept-Encoding: as it is')
    t.match(response.headers.etag, /^"[A-Za-z0-9_-]+"$/, 'a strong tag')
    t.notOk(/\/\*|^\s*\/\/ /m.test(response.text), 'no comments: they are in the sources')
    t.notOk(/^[ \t]/m.test(response.text), 'no indentation')
    t.notOk(/\bconst |\bfunction [a-zA-Z]{4,}\(/.test(response.text), 'local names shortened')
    t.equal(
      response.text.trimEnd().split('\n').at(-1),
      `//# sourceMappingURL=${name}.map`,
      'its last line names its source map, beside it',
    )

    const again = await httpRequest(url, `/client/v1/${name}`, {
      headers: { 'if-none-match': String(response.headers.etag) },
    })
    t.equal(again.status, 304, 'its tag gets a 304')
    t.equal(again.body.length, 0)
    t.equal(again.headers.etag, response.headers.etag)
    t.equal(again.headers['cache-control'], 'public, max-age=300')
    t.equal(again.headers['access-control-allow-origin'], '*')

    const head = await httpRequest(url, `/client/v1/${name}`, { method: 'HEAD' })
    t.equal(head.status, 200)
    t.equal(head.headers.etag, response.headers.etag)
    t.equal(head.body.length, 0)
  })

  t.test(`${name}: br and gzip, each with a strong tag of its own`, async (t) => {
    const built = await readFile(join(PACKAGE_ROOT, SERVED_DIR, name))
    const identity = await httpRequest(url, `/client/v1/${name}`)
    const br = await httpRequest(url, `/client/v1/${name}`, {
      headers: { 'accept-encoding': CHROMIUM_ACCEPT_ENCODING },
    })
    t.equal(br.headers['content-encoding'], 'br')
    t.ok(brotliDecompressSync(br.body).equals(built), 'br decodes to the module')
    const gzip = await httpRequest(url, `/client/v1/${name}`, {
      headers: { 'accept-encoding': 'gzip' },
    })
    t.equal(gzip.headers['content-encoding'], 'gzip')
    t.ok(gunzipSync(gzip.body).equals(built), 'gzip decodes to the module')
    const tags = [identity, br, gzip].map((response) => response.headers.etag)
    t.equal(new Set(tags).size, 3, `three codings, three tags: ${tags.join(' ')}`)
    t.equal(br.headers.vary, 'Accept-Encoding')
    t.comment(`${name}: ${built.length} bytes, br ${br.body.length}, gzip ${gzip.body.length}`)

    const revalidated = await httpRequest(url, `/client/v1/${name}`, {
      headers: {
        'accept-encoding': CHROMIUM_ACCEPT_ENCODING,
        'if-none-match': String(br.headers.etag),
      },
    })
    t.equal(revalidated.status, 304, 'the br tag matches the br coding')
    const mismatched = await httpRequest(url, `/client/v1/${name}`, {
      headers: { 'accept-encoding': 'gzip', 'if-none-match': String(br.headers.etag) },
    })
    t.equal(mismatched.status, 200, 'but not the gzip one')
  })
}

t.test('each module is at most 3,500 bytes as gzip -9 compresses it', async (t) => {
  for (const name of MODULES) {
    const built = await readFile(join(PACKAGE_ROOT, SERVED_DIR, name))
    const size = gzipSync(built, { level: 9 }).length
    t.ok(size <= MAX_GZIP_BYTES, `${name}: ${size} bytes`)
  }
})

t.test(
  "the package's copies: within the bound too, readable, their declarations documented",
  async (t) => {
    for (const name of MODULES) {
      const copy = await readFile(join(PACKAGE_ROOT, 'dist/client', name), 'utf8')
      const size = gzipSync(copy, { level: 9 }).length
      t.ok(size <= MAX_GZIP_BYTES, `${name}: ${size} bytes`)
      t.match(copy, /\n {4}\S/, `${name} keeps its indentation`)
      t.match(copy, /\/\/# sourceMappingURL=/, `${name} names its source map`)
    }
    const declarations = await readFile(join(PACKAGE_ROOT, 'dist/client/shell-types.d.ts'), 'utf8')
    t.match(declarations, /\/\*\*/, 'the declarations keep their doc comments')
  },
)

t.test('the source maps: served beside the modules, naming the sources they hold', async (t) => {
  for (const name of MODULES) {
    const response = await httpRequest(url, `/client/v1/${name}.map`, {
      headers: { origin: 'https://elsewhere.example.org', 'accept-encoding': 'gzip' },
    })
    t.equal(response.status, 200, `${name}.map`)
    t.equal(response.headers['content-type'], 'application/json; charset=utf-8')
    t.equal(response.headers['cache-control'], 'public, max-age=300')
    t.equal(response.headers['access-control-allow-origin'], '*')
    t.equal(response.headers['content-encoding'], 'gzip', 'compressed as the modules are')
    const map = JSON.parse(gunzipSync(response.body).toString('utf8')) as {
      version: number
      sources: string[]
      sourcesContent: string[]
      mappings: string
    }
    t.equal(map.version, 3)
    t.ok(map.mappings.length > 0, 'with mappings')
    const entry = name.replace(/\.js$/, '.ts')
    t.ok(
      map.sources.some((source) => source.endsWith(`src/client/${entry}`)),
      `${name}: its sources name ${entry}: ${map.sources.join(', ')}`,
    )
    for (const [index, source] of map.sources.entries()) {
      const path = join(PACKAGE_ROOT, 'src/client', source.split('src/client/')[1] ?? '')
      t.equal(map.sourcesContent[index], await readFile(path, 'utf8'), `${source}, whole`)
    }
  }
  const frame = await readFile(join(PACKAGE_ROOT, SERVED_DIR, 'shell-frame.js'), 'utf8')
  const imports = [...frame.matchAll(/\bfrom\s*"([^"]+)"|\bimport\s*\(?\s*"([^"]+)"/g)]
  t.same(
    imports.map((match) => match[1] ?? match[2]),
    ['./shell-client.js'],
    'shell-frame.js imports ./shell-client.js only',
  )
  const client = await readFile(join(PACKAGE_ROOT, SERVED_DIR, 'shell-client.js'), 'utf8')
  t.notMatch(client, /\bfrom\s*"|\bimport\s*\(/, 'shell-client.js imports nothing')
})

t.test('without a token, and only these files', async (t) => {
  const other = await httpRequest(url, '/client/v1/other.js')
  t.equal(other.status, 404)
  const source = await httpRequest(url, '/client/v1/shell-client.ts')
  t.equal(source.status, 404)
  const part = await httpRequest(url, '/client/v1/shell-stream.js')
  t.equal(part.status, 404, 'not the package’s own files')
  const post = await httpRequest(url, '/client/v1/shell-client.js', { method: 'POST' })
  t.equal(post.status, 404, 'GET and HEAD only')
})

t.test('the OpenAPI document does not list them', async (t) => {
  const document = (await httpRequest(url, '/openapi.json')).json<{ paths: object }>()
  t.notOk(
    Object.keys(document.paths).some((path) => path.startsWith('/client/')),
    'no /client/ path',
  )
})
