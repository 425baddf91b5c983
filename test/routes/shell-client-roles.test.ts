import t from 'tap'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'

/**
 * OIDC_ROLES_CLAIM with Keycloak's realm and client roles: a real token over
 * real HTTP, the union in `user.roles` and in what the menus show, roles of
 * another client left out.
 */

const logs = createLogCapture()
const { url, jwks } = await startTestService(t, {
  logs,
  env: { OIDC_ROLES_CLAIM: 'realm_access.roles,resource_access.crm.roles' },
})

/** An access token as Keycloak issues it: realm roles, then roles per client. */
function signKeycloakToken(resourceAccess: Record<string, { roles: string[] }>): Promise<string> {
  return jwks.sign({
    sub: '6c1f0e2a',
    preferred_username: 'ada',
    azp: 'crm-frontend',
    realm_access: { roles: ['default-roles-internal', 'offline_access', 'crm-sales'] },
    resource_access: resourceAccess,
  })
}

async function getShell(token: string) {
  const response = await httpRequest(url, '/api/v1/shell/crm', bearer(token))
  t.equal(response.status, 200)
  const body = response.json<{
    user: { roles: string[] }
    menus: Record<string, { id: string }[]>
  }>()
  return { roles: body.user.roles, sidebar: (body.menus.sidebar ?? []).map((item) => item.id) }
}

t.test('realm roles and the crm client roles together, each once', async (t) => {
  const shell = await getShell(
    await signKeycloakToken({
      crm: { roles: ['crm-manager', 'crm-sales'] },
      'other-client': { roles: ['crm-admin'] },
      account: { roles: ['manage-account', 'view-profile'] },
    }),
  )
  t.same(shell.roles, ['crm-manager', 'crm-sales', 'default-roles-internal', 'offline_access'])
  // leads and opportunities need crm-sales (a realm role), reports crm-manager (a client
  // role); admin needs crm-admin, which only the other client grants.
  t.same(shell.sidebar, [
    'dashboard',
    'contacts',
    'accounts',
    'leads',
    'opportunities',
    'activities',
    'reports',
  ])
})

t.test('a token without client roles: the realm roles alone', async (t) => {
  const shell = await getShell(await signKeycloakToken({}))
  t.same(shell.roles, ['crm-sales', 'default-roles-internal', 'offline_access'])
  t.notOk(shell.sidebar.includes('reports'), 'no crm-manager without the client role')
})

t.test('another client granting crm-admin gives nothing', async (t) => {
  const shell = await getShell(
    await signKeycloakToken({ 'other-client': { roles: ['crm-admin', 'crm-manager'] } }),
  )
  t.same(shell.roles, ['crm-sales', 'default-roles-internal', 'offline_access'])
  t.notOk(shell.sidebar.includes('admin'))
  t.notOk(shell.sidebar.includes('reports'))
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
