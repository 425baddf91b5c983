import t from 'tap'
import { rewriteToDiscoveryOrigin } from '../../src/auth/jwks-location.js'
import { AuthError } from '../../src/auth/verify-token.js'
import { readMetric } from '../helpers/metrics.js'
import { waitFor } from '../helpers/wait.js'
import { authenticated, isServedFromCache, setUpVerifier } from './verifier-fixture.js'

const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  )

t.test('keys are fetched lazily, once, however many callers arrive together', async (t) => {
  const fixture = await setUpVerifier(t)
  t.same(fixture.server.requests.paths, [], 'nothing fetched at construction')
  const tokens = await Promise.all(
    [1, 2, 3, 4, 5].map((n) => fixture.server.sign({ sub: `u${n}` })),
  )
  const callers = await Promise.all(tokens.map((token) => authenticated(fixture.verifier, token)))
  t.same(
    callers.map((caller) => caller.sub),
    ['u1', 'u2', 'u3', 'u4', 'u5'],
  )
  t.equal(fixture.server.requests.discovery, 1)
  t.equal(fixture.server.requests.jwks, 1)
  t.equal(
    await readMetric(fixture.metrics.jwksFetches, { result: 'success' }),
    2,
    'discovery and key set',
  )
})

t.test(
  'key rotation: a new kid verifies after one fetch, further unknown kids wait for the cooldown',
  async (t) => {
    const fixture = await setUpVerifier(t, { oidc: () => ({ jwksCooldownS: 10 }) })
    const { server, verifier, clock } = fixture
    await authenticated(verifier, await server.sign())
    const rotated = await server.addKey({ alg: 'ES256' })
    const rotatedCaller = await authenticated(
      verifier,
      await server.sign({ sub: 'rotated' }, { kid: rotated }),
    )
    t.equal(rotatedCaller.sub, 'rotated')
    t.equal(server.requests.jwks, 2, 'one fetch for the new kid')

    const later = await server.addKey()
    const laterToken = await server.sign({ sub: 'later' }, { kid: later })
    const error = await refusalOf(authenticated(verifier, laterToken))
    t.equal((error as AuthError).result, 'unknown_kid')
    t.equal(server.requests.jwks, 2, 'no fetch within the cooldown')

    clock.advance(10_001)
    t.equal((await authenticated(verifier, laterToken)).sub, 'later')
    t.equal(server.requests.jwks, 3, 'after the cooldown one more fetch')
    t.equal(server.requests.discovery, 1, 'discovery is not repeated while it works')
  },
)

t.test(
  'provider down at first use: keys_unavailable, fail fast, then recovery without a new verifier',
  async (t) => {
    const fixture = await setUpVerifier(t)
    const { server, verifier, clock, metrics } = fixture
    server.setAvailability('status-503')
    const token = await server.sign()
    const first = await refusalOf(authenticated(verifier, token))
    t.ok(first instanceof AuthError)
    t.equal((first as AuthError).kind, 'keys_unavailable')
    t.equal((first as AuthError).result, 'keys_unavailable')
    t.equal(await readMetric(metrics.jwksFetches, { result: 'error' }), 1)
    const requestsAfterFirst = server.requests.paths.length

    const second = await refusalOf(authenticated(verifier, token))
    t.equal((second as AuthError).kind, 'keys_unavailable', 'fails fast')
    t.equal(server.requests.paths.length, requestsAfterFirst, 'without another request')

    server.setAvailability('reset')
    clock.advance(1_100)
    const third = await refusalOf(authenticated(verifier, token))
    t.equal(
      (third as AuthError).kind,
      'keys_unavailable',
      'a dropped connection is also unavailability',
    )
    t.equal(await readMetric(metrics.jwksFetches, { result: 'error' }), 2)

    server.setAvailability('up')
    clock.advance(1_100)
    t.equal((await authenticated(verifier, token)).sub, 'user-1', 'recovers on its own')
    t.equal(await readMetric(metrics.tokenVerifications, { result: 'keys_unavailable' }), 3)
    t.equal(await readMetric(metrics.tokenVerifications, { result: 'ok' }), 1)
  },
)

t.test('garbage and forged tokens are a 401 even while the provider is down', async (t) => {
  const fixture = await setUpVerifier(t)
  fixture.server.setAvailability('status-503')
  const none = await refusalOf(
    authenticated(fixture.verifier, await fixture.server.sign({}, { forge: 'none' })),
  )
  t.equal((none as AuthError).kind, 'invalid_token')
  const garbage = await refusalOf(authenticated(fixture.verifier, 'x.y.z'))
  t.equal((garbage as AuthError).kind, 'invalid_token')
  t.same(fixture.server.requests.paths, [])
})

t.test(
  'a good header on a payload that is not JSON is a 401 while the provider is down',
  async (t) => {
    const fixture = await setUpVerifier(t)
    fixture.server.setAvailability('status-503')
    const [header, , signature] = (await fixture.server.sign()).split('.')
    const notJson = Buffer.from('not json').toString('base64url')
    const padded = `${Buffer.from('{"sub":"x"}').toString('base64url')}=`
    for (const payload of [notJson, padded]) {
      const refusal = await refusalOf(
        authenticated(fixture.verifier, `${header}.${payload}.${signature}`),
      )
      t.equal((refusal as AuthError).kind, 'invalid_token', 'not keys_unavailable')
      t.equal((refusal as AuthError).result, 'malformed')
    }
    // A well-formed token still cannot be judged: that one is a 503.
    const good = await refusalOf(authenticated(fixture.verifier, await fixture.server.sign()))
    t.equal((good as AuthError).kind, 'keys_unavailable')
  },
)

t.test(
  'provider down after keys were fetched and past the max age: known keys keep verifying',
  async (t) => {
    const fixture = await setUpVerifier(t, { oidc: () => ({ jwksMaxAgeS: 60 }) })
    const { server, verifier, clock, metrics } = fixture
    const cachedToken = await server.sign({ sub: 'cached' })
    await authenticated(verifier, cachedToken)
    server.setAvailability('reset')
    clock.advance(61_000)

    const fresh = await authenticated(verifier, await server.sign({ sub: 'fresh' }))
    t.equal(fresh.sub, 'fresh', 'an uncached token with a known kid verifies')
    await waitFor(
      async () => (await readMetric(metrics.jwksFetches, { result: 'error' })) === 1,
      'the failed refresh',
    )
    t.ok(await isServedFromCache(fixture, cachedToken), 'cached tokens stay')
    t.equal((await authenticated(verifier, await server.sign({ sub: 'again' }))).sub, 'again')
    t.equal(
      await readMetric(metrics.jwksFetches, { result: 'error' }),
      1,
      'a failed refresh is not retried at once',
    )

    server.setAvailability('up')
    clock.advance(31_000)
    await authenticated(verifier, await server.sign({ sub: 'after' }))
    await waitFor(() => server.requests.jwks === 2, 'the refresh after the outage')
  },
)

t.test('a key that leaves the set takes its cached tokens with it', async (t) => {
  const fixture = await setUpVerifier(t, { oidc: () => ({ jwksMaxAgeS: 60 }) })
  const { server, verifier, clock } = fixture
  const [retiredKid] = server.publishedKids()
  const keptKid = await server.addKey()
  const retiredToken = await server.sign({ sub: 'retired' }, { kid: retiredKid })
  const keptToken = await server.sign({ sub: 'kept' }, { kid: keptKid })
  await authenticated(verifier, retiredToken)
  await authenticated(verifier, keptToken)
  server.unpublishKey(retiredKid as string)
  clock.advance(61_000)

  // Even a cache-only workload starts the refresh, so removed keys are noticed.
  t.ok(await isServedFromCache(fixture, keptToken))
  await waitFor(
    async () => !(await isServedFromCache(fixture, retiredToken)),
    'the retired token to be dropped',
  )
  t.ok(await isServedFromCache(fixture, keptToken), 'tokens of remaining keys stay cached')
  const error = await refusalOf(authenticated(verifier, retiredToken))
  t.equal((error as AuthError).result, 'unknown_kid')
})

t.test(
  'in-cluster discovery: a jwks_uri on the issuer origin is fetched from the discovery origin',
  async (t) => {
    const fixture = await setUpVerifier(t, {
      server: {
        issuer: 'http://issuer.example/realms/x',
        jwksPath: '/realms/x/protocol/openid-connect/certs',
      },
      oidc: (server) => ({ discoveryUrl: `${server.origin}/realms/x/` }),
    })
    fixture.server.setAdvertisedJwksUri(
      'http://issuer.example/realms/x/protocol/openid-connect/certs',
    )
    const caller = await authenticated(fixture.verifier, await fixture.server.sign())
    t.equal(caller.sub, 'user-1')
    t.same(fixture.server.requests.paths, [
      '/realms/x/.well-known/openid-configuration',
      '/realms/x/protocol/openid-connect/certs',
    ])
  },
)

t.test('an explicit JWKS URL skips discovery', async (t) => {
  const fixture = await setUpVerifier(t, { oidc: (server) => ({ jwksUrl: server.jwksUrl }) })
  await authenticated(fixture.verifier, await fixture.server.sign())
  t.equal(fixture.server.requests.discovery, 0)
  t.equal(fixture.server.requests.jwks, 1)
})

t.test('a discovery document without a usable jwks_uri counts as a failed fetch', async (t) => {
  const fixture = await setUpVerifier(t)
  fixture.server.setAdvertisedJwksUri('not a url')
  const error = await refusalOf(authenticated(fixture.verifier, await fixture.server.sign()))
  t.equal((error as AuthError).kind, 'keys_unavailable')
  t.equal(await readMetric(fixture.metrics.jwksFetches, { result: 'error' }), 1)
})

t.test('close() stops a verifier that never had keys from fetching', async (t) => {
  const fixture = await setUpVerifier(t)
  fixture.verifier.close()
  const error = await refusalOf(authenticated(fixture.verifier, await fixture.server.sign()))
  t.equal((error as AuthError).kind, 'keys_unavailable')
  t.same(fixture.server.requests.paths, [])
})

t.test('rewriteToDiscoveryOrigin only rewrites jwks_uri on the issuer origin', async (t) => {
  const issuer = 'https://id.example.com/realms/x'
  const inCluster = 'http://keycloak.auth.svc:8080/realms/x'
  t.equal(
    rewriteToDiscoveryOrigin({
      issuer,
      discoveryUrl: inCluster,
      jwksUri: 'https://id.example.com/realms/x/protocol/openid-connect/certs?v=2',
    }),
    'http://keycloak.auth.svc:8080/realms/x/protocol/openid-connect/certs?v=2',
  )
  const elsewhere = 'https://keys.example.net/certs'
  t.equal(
    rewriteToDiscoveryOrigin({ issuer, discoveryUrl: inCluster, jwksUri: elsewhere }),
    elsewhere,
  )
  const same = 'https://id.example.com/realms/x/certs'
  t.equal(rewriteToDiscoveryOrigin({ issuer, discoveryUrl: issuer, jwksUri: same }), same)
})

t.test(
  'a new kid while the provider is down: keys_unavailable (503), not unknown_kid, until the provider is back',
  async (t) => {
    const fixture = await setUpVerifier(t, { oidc: () => ({ jwksCooldownS: 10 }) })
    const { server, verifier, clock } = fixture
    t.equal((await authenticated(verifier, await server.sign({ sub: 'known' }))).sub, 'known')
    const [knownKid] = server.publishedKids()
    const rotated = await server.addKey({ alg: 'ES256' })
    const rotatedToken = await server.sign({ sub: 'rotated' }, { kid: rotated })
    server.setAvailability('status-503')
    const first = await refusalOf(authenticated(verifier, rotatedToken))
    t.equal((first as AuthError).result, 'keys_unavailable', 'the permitted re-fetch failed')
    t.equal((first as AuthError).kind, 'keys_unavailable')
    const withinCooldown = await refusalOf(authenticated(verifier, rotatedToken))
    t.equal(
      (withinCooldown as AuthError).result,
      'keys_unavailable',
      'still the provider, within the cooldown',
    )
    t.equal(
      (await authenticated(verifier, await server.sign({ sub: 'known-2' }, { kid: knownKid }))).sub,
      'known-2',
      'known keys still verify',
    )
    server.setAvailability('up')
    clock.advance(10_001)
    t.equal(
      (await authenticated(verifier, rotatedToken)).sub,
      'rotated',
      'verifies once the provider is back',
    )
  },
)
