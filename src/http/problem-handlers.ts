import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { ConnectionError, FastifyError, FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { buildHttpProblem, PROBLEM_CONTENT_TYPE, sendProblem, sendProblemBody } from './problem.js'

/** Every error a problem body, a 5xx logged: on the API's instance and the admin port's alike. */
export function registerProblemHandlers(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    // Fastify's own 4xx (a body too large, …) keep their status.
    if (status >= 400 && status < 500) {
      return sendProblemBody(reply, buildHttpProblem(status, describeClientError(error)))
    }
    logger.error(
      { err: error, reqId: request.id, url: request.url.slice(0, 200) },
      'request failed',
    )
    return sendProblem(reply, 'internal', 'the request could not be completed')
  })

  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      'notFound',
      `no route ${request.method} ${request.url.split('?')[0]?.slice(0, 200)}`,
    ),
  )
}

/** Fastify's own messages describe the request, not the server; they are safe to return. */
export function describeClientError(error: Error): string {
  return error.message.replace(/\s+/g, ' ').slice(0, 200) || 'the request is not valid'
}

/** What the HTTP parser refused, as a problem, then closed: the rest of its bytes are untrusted. */
export function writeClientErrorProblem(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [status, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request did not arrive in time']
        : [400, 'the request is not valid HTTP']
  const body = JSON.stringify(buildHttpProblem(status, detail))
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy(error)
}
