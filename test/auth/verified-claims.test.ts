import t from 'tap'
import { readRoles } from '../../src/auth/verified-claims.js'
import { splitClaimPath } from '../../src/config/config.js'

/** The roles claim read from a verified payload: one dot path or several, as Keycloak shapes them. */

const REALM = splitClaimPath('realm_access.roles')
const CRM_CLIENT = splitClaimPath('resource_access.crm.roles')

/** An access token's payload as Keycloak issues it to the `crm` client's user. */
const keycloakPayload = {
  sub: 'f1d2',
  realm_access: { roles: ['offline_access', 'crm-sales', 'default-roles-internal'] },
  resource_access: {
    crm: { roles: ['crm-manager', 'crm-sales'] },
    'other-client': { roles: ['crm-admin', 'other-admin'] },
    account: { roles: ['manage-account'] },
  },
}

t.test('one path: the strings of its array, de-duplicated and sorted', async (t) => {
  t.same(readRoles({ realm_access: { roles: ['b', 'a', 'b', 7, null, { x: 1 }, 'A'] } }, [REALM]), [
    'A',
    'a',
    'b',
  ])
})

t.test('several paths: the union, a role in two paths counted once', async (t) => {
  t.same(readRoles(keycloakPayload, [REALM, CRM_CLIENT]), [
    'crm-manager',
    'crm-sales',
    'default-roles-internal',
    'offline_access',
  ])
  t.same(
    readRoles(keycloakPayload, [CRM_CLIENT, REALM]),
    readRoles(keycloakPayload, [REALM, CRM_CLIENT]),
    'the order of the paths does not matter',
  )
})

t.test('roles of clients not named are not taken', async (t) => {
  const roles = readRoles(keycloakPayload, [REALM, CRM_CLIENT])
  for (const role of ['crm-admin', 'other-admin', 'manage-account'])
    t.notOk(roles.includes(role), role)
})

t.test('a path that is absent, or not an array, gives no roles and keeps the others', async (t) => {
  const noClientRoles = { sub: 'x', realm_access: { roles: ['crm-sales'] } }
  t.same(readRoles(noClientRoles, [REALM, CRM_CLIENT]), ['crm-sales'])
  t.same(readRoles({ sub: 'x' }, [REALM, CRM_CLIENT]), [])
  const oddShapes = {
    realm_access: { roles: 'crm-sales' },
    resource_access: { crm: ['crm-sales'] },
  }
  t.same(readRoles(oddShapes, [REALM, CRM_CLIENT]), [])
  t.same(
    readRoles({ resource_access: null, realm_access: { roles: ['a'] } }, [CRM_CLIENT, REALM]),
    ['a'],
  )
})

t.test('inherited properties are not claims', async (t) => {
  t.same(readRoles({ sub: 'x' }, [splitClaimPath('constructor.prototype')]), [])
  t.same(readRoles({ sub: 'x' }, [splitClaimPath('__proto__.roles')]), [])
})
