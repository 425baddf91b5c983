import { STATUS_CODES } from 'node:http'
import type { FastifyReply } from 'fastify'

/** RFC 9457 problem details: every error the service sends has this shape. */
export interface ProblemBody {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

/** The kinds of problem the service reports, each with a stable type URI and title. */
export const PROBLEMS = {
  unauthorized: { status: 401, title: 'Unauthorized' },
  invalidToken: { status: 401, title: 'Invalid token' },
  originNotAllowed: { status: 403, title: 'Origin not allowed' },
  localOnly: { status: 403, title: 'Forbidden' },
  notFound: { status: 404, title: 'Not found' },
  methodNotAllowed: { status: 405, title: 'Method not allowed' },
  notReady: { status: 503, title: 'Not ready' },
  keysUnavailable: { status: 503, title: 'Identity provider unavailable' },
  streamsFull: { status: 503, title: 'Too many event streams' },
  overloaded: { status: 503, title: 'Overloaded' },
  badRequest: { status: 400, title: 'Bad request' },
  internal: { status: 500, title: 'Internal server error' },
} as const

export type ProblemKind = keyof typeof PROBLEMS

/** An error of HTTP itself: type `about:blank`, whose title is by RFC 9457 the status's phrase. */
export function buildHttpProblem(status: number, detail: string): ProblemBody {
  return { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail }
}

/** `invalidToken` → type `urn:shell-data:problem:invalid-token`: stable, no web page to keep. */
export function sendProblem(
  reply: FastifyReply,
  kind: ProblemKind,
  detail: string,
  headers: Record<string, string> = {},
): FastifyReply {
  const { title, status } = PROBLEMS[kind]
  const type = `urn:shell-data:problem:${kind.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
  return sendProblemBody(reply.headers(headers), { type, title, status, detail })
}

export function sendProblemBody(reply: FastifyReply, body: ProblemBody): FastifyReply {
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body))
}

/** Declared on every route for every error status. */
export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
  },
} as const
