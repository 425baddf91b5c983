import t from 'tap'
import { AuthError } from '../../src/auth/verify-token.js'
import type { TokenVerificationResult } from '../../src/metrics.js'
import type { JwksServer } from '../helpers/jwks-server.js'
import { readMetric } from '../helpers/metrics.js'
import { authenticated, isServedFromCache, setUpVerifier } from './verifier-fixture.js'

/** Flips one character in the middle of the signature, so the bytes surely change. */
function tamperSignature(token: string): string {
  const [header, payload, signature = ''] = token.split('.')
  const middle = Math.floor(signature.length / 2)
  const flipped = signature[middle] === 'A' ? 'B' : 'A'
  return `${header}.${payload}.${signature.slice(0, middle)}${flipped}${signature.slice(middle + 1)}`
}

const encodeSegment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

interface RefusalCase {
  name: string
  result: TokenVerificationResult
  mint: (server: JwksServer) => Promise<string>
}

const refusals: RefusalCase[] = [
  {
    name: 'bad signature (tampered)',
    result: 'invalid_signature',
    mint: async (server) => tamperSignature(await server.sign()),
  },
  {
    name: 'signed by an unpublished key under a published kid',
    result: 'invalid_signature',
    mint: async (server) => {
      const [publishedKid] = server.publishedKids()
      const rogue = await server.addKey({ publish: false })
      return server.sign({}, { kid: rogue, headerKid: publishedKid })
    },
  },
  {
    name: 'expired beyond the clock tolerance',
    result: 'expired',
    mint: (server) => server.sign({}, { expiresInS: -120 }),
  },
  {
    name: 'not yet valid beyond the clock tolerance',
    result: 'expired',
    mint: (server) => server.sign({ nbf: Math.floor(Date.now() / 1000) + 120 }),
  },
  {
    name: 'wrong audience',
    result: 'invalid_audience',
    mint: (server) => server.sign({ aud: ['account', 'someone-else'] }),
  },
  {
    name: 'no audience',
    result: 'invalid_audience',
    mint: (server) => server.sign({ aud: undefined }),
  },
  {
    name: 'wrong issuer',
    result: 'invalid_issuer',
    mint: (server) => server.sign({ iss: `${server.issuer}-other` }),
  },
  {
    name: 'alg none',
    result: 'invalid_signature',
    mint: (server) => server.sign({}, { forge: 'none' }),
  },
  {
    name: 'HS256',
    result: 'invalid_signature',
    mint: (server) => server.sign({}, { forge: 'HS256' }),
  },
  {
    name: 'an ID token (typ ID)',
    result: 'malformed',
    mint: (server) => server.sign({ typ: 'ID' }),
  },
  {
    name: 'a refresh token',
    result: 'malformed',
    mint: (server) => server.sign({ typ: 'Refresh' }),
  },
  {
    name: 'header typ of another kind',
    result: 'malformed',
    mint: (server) => server.sign({}, { typ: 'dpop+jwt' }),
  },
  { name: 'no sub', result: 'malformed', mint: (server) => server.sign({ sub: undefined }) },
  { name: 'not a JWT', result: 'malformed', mint: async () => 'definitely-not-a-jwt' },
  {
    name: 'header not JSON',
    result: 'malformed',
    mint: async (server) => {
      const [, payload, signature] = (await server.sign()).split('.')
      return `${Buffer.from('{"alg":').toString('base64url')}.${payload}.${signature}`
    },
  },
  {
    name: 'payload not JSON',
    result: 'malformed',
    mint: async () => `${encodeSegment({ alg: 'RS256', kid: 'x' })}.bm90IGpzb24.c2ln`,
  },
  {
    name: 'over 8 KiB even though correctly signed',
    result: 'malformed',
    mint: (server) => server.sign({ padding: 'x'.repeat(9000) }),
  },
]

for (const refusal of refusals) {
  t.test(`refuses ${refusal.name}: 401, result ${refusal.result}`, async (t) => {
    const fixture = await setUpVerifier(t)
    const token = fixture.track(await refusal.mint(fixture.server))
    const error = await authenticated(fixture.verifier, token).catch((caught: unknown) => caught)
    t.ok(error instanceof AuthError, 'rejects with AuthError')
    const authError = error as AuthError
    t.equal(authError.kind, 'invalid_token')
    t.equal(authError.result, refusal.result)
    t.notOk(authError.description.includes(token), 'description does not echo the token')
    t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: refusal.result }), 1)
    t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'ok' }), 0)
    t.notOk(await isServedFromCache(fixture, token), 'a refused token is not cached')
    t.same(fixture.leaks(), [])
  })
}

t.test('an oversized token is refused without touching the provider', async (t) => {
  const fixture = await setUpVerifier(t)
  const error = await authenticated(fixture.verifier, `${'a'.repeat(8200)}.b.c`).catch(
    (caught) => caught,
  )
  t.equal((error as AuthError).result, 'malformed')
  t.same(fixture.server.requests.paths, [])
})

t.test('an unknown kid is refused after exactly one re-fetch', async (t) => {
  const fixture = await setUpVerifier(t)
  await authenticated(fixture.verifier, await fixture.server.sign())
  t.equal(fixture.server.requests.jwks, 1)
  const stranger = await fixture.server.addKey({ publish: false })
  const error = await authenticated(
    fixture.verifier,
    await fixture.server.sign({}, { kid: stranger }),
  ).catch((caught: unknown) => caught)
  t.equal((error as AuthError).result, 'unknown_kid')
  t.equal((error as AuthError).kind, 'invalid_token')
  t.equal(fixture.server.requests.jwks, 2, 'one permitted re-fetch')
  t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'unknown_kid' }), 1)
})

t.test('header typ absent, JWT, at+jwt and application/at+jwt are accepted', async (t) => {
  const fixture = await setUpVerifier(t)
  for (const typ of [null, 'JWT', 'at+jwt', 'AT+JWT', 'application/at+jwt']) {
    const caller = await authenticated(fixture.verifier, await fixture.server.sign({}, { typ }))
    t.equal(caller.sub, 'user-1', `typ ${typ ?? '(absent)'}`)
  }
  t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'ok' }), 5)
})

t.test('payload typ absent or Bearer is accepted', async (t) => {
  const fixture = await setUpVerifier(t)
  await authenticated(fixture.verifier, await fixture.server.sign({ typ: undefined }))
  await authenticated(fixture.verifier, await fixture.server.sign({ typ: 'Bearer' }))
  t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'ok' }), 2)
})

t.test('EC and RSA keys both verify; a second audience is accepted', async (t) => {
  const fixture = await setUpVerifier(t, { server: { initialKeys: ['RS256', 'ES256'] } })
  const ec = await authenticated(
    fixture.verifier,
    await fixture.server.sign({ aud: 'other-audience' }),
  )
  t.equal(ec.sub, 'user-1')
  t.equal(fixture.server.requests.jwks, 1)
})

t.test('roles come from realm_access.roles, strings only, de-duplicated and sorted', async (t) => {
  const fixture = await setUpVerifier(t)
  const caller = await authenticated(
    fixture.verifier,
    await fixture.server.sign({
      realm_access: { roles: ['crm-sales', 'crm-admin', 'crm-sales', 42, null, 'Crm-Upper'] },
    }),
  )
  t.same(caller.roles, ['Crm-Upper', 'crm-admin', 'crm-sales'])
  t.ok(Object.isFrozen(caller.roles))
  const none = await authenticated(fixture.verifier, await fixture.server.sign({ sub: 'user-2' }))
  t.same(none.roles, [])
})

t.test('roles follow a custom OIDC_ROLES_CLAIM path', async (t) => {
  const fixture = await setUpVerifier(t, {
    oidc: () => ({ rolesPaths: [['resource_access', 'shell', 'roles']] }),
  })
  const caller = await authenticated(
    fixture.verifier,
    await fixture.server.sign({
      realm_access: { roles: ['ignored'] },
      resource_access: { shell: { roles: ['b', 'a', 'b'] } },
    }),
  )
  t.same(caller.roles, ['a', 'b'])
  const wrongShape = await authenticated(
    fixture.verifier,
    await fixture.server.sign({ sub: 'user-2', resource_access: { shell: 'not-an-object' } }),
  )
  t.same(wrongShape.roles, [])
})
