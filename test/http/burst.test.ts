import t from 'tap'
import { bearer, httpRequest } from '../helpers/http-client.js'
import { createLogCapture, startTestService } from '../helpers/service.js'

/**
 * A burst the instance can answer is answered in full (CONTRACT "Under overload"): 200 requests
 * sent at once to an idle instance, each on a connection of its own, with a mix of tokens
 * (valid and never seen, valid and cached, expired, garbage, none), all get their own status,
 * none a 503. The rule that decides is the service's own (http/standing-queue.ts), on a real
 * clock; how fast the burst is answered is the bench's to say, not this test's.
 */

const logs = createLogCapture()
const { url, token, jwks } = await startTestService(t, { logs })
const SHELL = '/api/v1/shell/crm'
const BURST = 200

t.test('200 requests at once on fresh connections: every one its own status, no 503', async (t) => {
  const cached = await token({ sub: 'cached', roles: ['crm-sales'] })
  t.equal((await httpRequest(url, SHELL, bearer(cached))).status, 200, 'the cached token, once')
  const expired = await jwks.sign(
    { sub: 'late', realm_access: { roles: [] } },
    { expiresInS: -120 },
  )
  const requests = await Promise.all(
    Array.from({ length: BURST }, async (_, i) => {
      switch (i % 5) {
        case 0:
          return {
            expected: 200,
            options: bearer(await token({ sub: `new-${i}`, roles: ['crm-sales'] })),
          }
        case 1:
          return { expected: 200, options: bearer(cached) }
        case 2:
          return { expected: 401, options: bearer(expired) }
        case 3:
          return { expected: 401, options: bearer(`garbage.${i}.token`) }
        default:
          return { expected: 401, options: {} }
      }
    }),
  )
  const answers = await Promise.all(
    requests.map(async ({ expected, options }) => ({
      expected,
      status: (await httpRequest(url, SHELL, options)).status,
    })),
  )
  const statuses = answers.map((answer) => answer.status)
  t.equal(statuses.filter((status) => status === 503).length, 0, 'none shed')
  t.same(
    statuses,
    answers.map((answer) => answer.expected),
    'each its own status: 200 for a valid token, 401 for the others',
  )
})
