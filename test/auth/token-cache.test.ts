import t from 'tap'
import { createTokenCache } from '../../src/auth/token-cache.js'
import { readVerifiedClaims } from '../../src/auth/verified-claims.js'
import { AuthError } from '../../src/auth/verify-token.js'
import { readMetric } from '../helpers/metrics.js'
import { authenticated, isServedFromCache, setUpVerifier } from './verifier-fixture.js'

/** Counts WebCrypto signature checks, which is where jose does the expensive part of verification. */
function countSignatureChecks(t: { teardown(fn: () => unknown): void }): () => number {
  const subtle = globalThis.crypto.subtle
  const original = subtle.verify
  let calls = 0
  subtle.verify = (...args: Parameters<typeof original>) => {
    calls += 1
    return original.apply(subtle, args)
  }
  t.teardown(() => {
    subtle.verify = original
  })
  return () => calls
}

t.test('a cache hit does no signature verification and counts a hit', async (t) => {
  const fixture = await setUpVerifier(t)
  const signatureChecks = countSignatureChecks(t)
  const token = await fixture.server.sign()
  const first = await authenticated(fixture.verifier, token)
  t.equal(signatureChecks(), 1, 'the first call checks the signature')
  const second = await authenticated(fixture.verifier, token)
  const third = await authenticated(fixture.verifier, token)
  t.equal(signatureChecks(), 1, 'later calls do not')
  t.equal(second, first, 'the same caller object, user block included')
  t.equal(third, first)
  const { tokenCache, tokenVerifications } = fixture.metrics
  t.equal(await readMetric(tokenCache, { result: 'miss' }), 1)
  t.equal(await readMetric(tokenCache, { result: 'hit' }), 2)
  t.equal(
    await readMetric(tokenVerifications, { result: 'ok' }),
    1,
    'verifications count misses only',
  )
  t.equal(fixture.server.requests.paths.length, 2, 'discovery and JWKS fetched once, lazily')
})

t.test('an entry never outlives its exp', async (t) => {
  const fixture = await setUpVerifier(t)
  const token = await fixture.server.sign({}, { expiresInS: 60 })
  await authenticated(fixture.verifier, token)
  // exp is whole seconds, up to 1 s before issuance + 60 s: stay clear of it, then step past it.
  fixture.clock.advance(58_000)
  t.ok(await isServedFromCache(fixture, token), 'served until exp')
  fixture.clock.advance(2_000)
  // Within the 30 s clock tolerance a fresh verification still passes, but it is not cached again.
  t.notOk(await isServedFromCache(fixture, token), 'not served after exp')
  t.notOk(await isServedFromCache(fixture, token), 'past exp nothing is cached')
  t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'ok' }), 3)
  t.equal((await authenticated(fixture.verifier, token)).sub, 'user-1')
  fixture.clock.advance(60_000)
  const error = await authenticated(fixture.verifier, token).catch((caught) => caught)
  t.ok(error instanceof AuthError)
  t.equal((error as AuthError).result, 'expired')
})

t.test('the cache holds at most cacheMax tokens, least recently used out first', async (t) => {
  const fixture = await setUpVerifier(t, { cacheMax: 2 })
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((sub) => fixture.server.sign({ sub })))
  for (const token of [a, b, c]) await authenticated(fixture.verifier, token as string)
  // b and c first: asking for a verifies it again, which evicts the least recently used.
  t.ok(await isServedFromCache(fixture, b as string))
  t.ok(await isServedFromCache(fixture, c as string))
  t.notOk(await isServedFromCache(fixture, a as string))
})

t.test('tokens that end alike never share a caller', async (t) => {
  const nowMs = Date.now()
  const cache = createTokenCache({ max: 10, now: () => nowMs })
  const exp = Math.floor(nowMs / 1000) + 300
  const alice = readVerifiedClaims({ sub: 'alice', exp }, [['realm_access', 'roles']])
  const bob = readVerifiedClaims({ sub: 'bob', exp }, [['realm_access', 'roles']])
  // The cache keys by the last 43 characters; these two differ only before them.
  const sharedEnd = 'S'.repeat(43)
  const aliceToken = `header.alice-payload.${sharedEnd}`
  const bobToken = `header.bob-payload.${sharedEnd}`
  const shortToken = 'short'

  cache.remember(aliceToken, alice, 'kid-1')
  t.equal(cache.get(aliceToken), alice)
  t.equal(cache.get(bobToken), undefined, "a colliding token is a miss, not alice's caller")
  t.equal(cache.get(aliceToken), alice, 'and the miss leaves the entry in place')

  cache.remember(bobToken, bob, 'kid-1')
  t.equal(cache.get(bobToken), bob, 'the newer token replaces the entry')
  t.equal(cache.get(aliceToken), undefined, 'the older one must be verified again')

  cache.remember(shortToken, alice, undefined)
  t.equal(cache.get(shortToken), alice, 'a token shorter than the key is keyed whole')
  t.equal(cache.get(`x${shortToken}`), undefined)

  t.equal(cache.dropVerifiedBy(new Set(['kid-1'])), 2, 'drops by kid, the kid-less one too')
  t.equal(cache.get(bobToken), undefined)
  t.equal(cache.get(shortToken), undefined)
})

t.test('authenticate() looks up once: a hit, or one counted miss', async (t) => {
  const fixture = await setUpVerifier(t)
  const token = await fixture.server.sign()
  const caller = await fixture.verifier.authenticate(token)
  t.equal(caller.sub, 'user-1')
  const { tokenCache, tokenVerifications } = fixture.metrics
  t.equal(await readMetric(tokenCache, { result: 'miss' }), 1)
  t.equal(await readMetric(tokenCache, { result: 'hit' }), 0)
  t.equal(await fixture.verifier.authenticate(token), caller, 'a cached token: the same caller')
  t.equal(await readMetric(tokenCache, { result: 'hit' }), 1)
  t.equal(await readMetric(tokenCache, { result: 'miss' }), 1)
  t.equal(await readMetric(tokenVerifications, { result: 'ok' }), 1)

  const error = await fixture.verifier
    .authenticate('not-a-token')
    .catch((caught: unknown) => caught)
  t.ok(error instanceof AuthError)
  t.equal(await readMetric(tokenCache, { result: 'miss' }), 2, 'a refused token counts one miss')
  t.equal(await readMetric(tokenVerifications, { result: 'malformed' }), 1)
})
