import t from 'tap'
import { readVerifiedClaims } from '../../src/auth/verified-claims.js'
import { buildCaller } from '../../src/snapshot/caller.js'
import { contentTag } from '../../src/snapshot/content-tag.js'

/** The caller as responses see it, made from a verified token's claims. */

const REALM_ROLES = [['realm_access', 'roles']]

t.test('the user block is exact JSON in the documented key order, tagged once', async (t) => {
  const exp = 1_900_000_000
  const caller = buildCaller(
    readVerifiedClaims(
      {
        sub: 'f1d2',
        exp,
        preferred_username: 'ada',
        name: 'Ada Lovelace',
        email: 'ada@example.org',
        realm_access: { roles: ['crm-sales'] },
      },
      REALM_ROLES,
    ),
  )
  t.equal(
    caller.userBlock.toString('utf8'),
    '{"sub":"f1d2","username":"ada","name":"Ada Lovelace","email":"ada@example.org","roles":["crm-sales"]}',
  )
  t.equal(caller.userTag, contentTag(caller.userBlock))
  t.equal(caller.expiresAtMs, exp * 1000)
  t.same(caller.roles, ['crm-sales'])
  t.ok(Object.isFrozen(caller))

  const sparse = buildCaller(readVerifiedClaims({ sub: 'x', exp, email: 7 }, REALM_ROLES))
  t.equal(
    sparse.userBlock.toString('utf8'),
    '{"sub":"x","username":null,"name":null,"email":null,"roles":[]}',
  )
})

t.test('non-ASCII claims are UTF-8, and equal claims give equal tags', async (t) => {
  const claims = readVerifiedClaims({ sub: 'zoë', exp: 1_900_000_000, name: 'Zoë 李' }, REALM_ROLES)
  const caller = buildCaller(claims)
  t.equal(JSON.parse(caller.userBlock.toString('utf8')).name, 'Zoë 李')
  t.equal(buildCaller(claims).userTag, caller.userTag)
  t.not(buildCaller({ ...claims, name: 'Zoe' }).userTag, caller.userTag)
})
