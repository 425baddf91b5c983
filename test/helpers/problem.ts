import type { Test } from 'tap'
import type { HttpResponse } from './http-client.js'

/**
 * Checks an RFC 9457 problem response as docs/api.md fixes it: the status,
 * `application/problem+json`, and a body of exactly type, title, status and
 * detail. Returns the body for further checks.
 */
export function expectProblem(
  t: Test,
  response: HttpResponse,
  status: number,
): Record<string, unknown> {
  t.equal(response.status, status, `status ${status}`)
  t.match(response.headers['content-type'], /^application\/problem\+json(;|$)/, 'problem+json')
  const body = response.json()
  t.same(Object.keys(body).sort(), ['detail', 'status', 'title', 'type'], 'exactly four keys')
  t.equal(body.status, status, 'status in the body')
  t.type(body.type, 'string')
  t.type(body.title, 'string')
  t.type(body.detail, 'string')
  return body
}
