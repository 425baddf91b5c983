import type { FastifyInstance } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { type EventStreams, STREAMS_FULL_RETRY_AFTER_S } from '../events/event-streams.js'
import { problemSchema, sendProblem } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import { secondsSinceReceived } from '../request-duration-histogram.js'
import { APP_KEY_PATTERN } from '../vocabulary.js'
import { authenticateThen } from './authenticate.js'
import type { SnapshotSource } from './snapshot-source.js'
import { sendNotReady } from './tagged-response.js'

const APP_KEY = new RegExp(APP_KEY_PATTERN)

/**
 * `GET /api/v1/shell/:appKey/events`: a Server-Sent Events stream of the
 * caller's shell ETag. The same token, language and errors as the shell; the
 * stream itself lives in `streams` once its headers are written.
 */
export function registerEventRoutes(
  app: FastifyInstance,
  deps: {
    verifier: TokenVerifier
    snapshots: SnapshotSource
    streams: EventStreams
    metrics: Metrics
  },
): void {
  const { verifier, snapshots, streams, metrics } = deps
  app.get<{ Params: { appKey: string } }>(
    '/api/v1/shell/:appKey/events',
    { schema: { response: eventResponses } },
    (request, reply) => {
      const { appKey } = request.params
      if (!APP_KEY.test(appKey)) return sendProblem(reply, 'notFound', 'no such app')
      return authenticateThen(verifier, request.headers.authorization, reply, (caller) => {
        const snapshot = snapshots.current()
        if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
        if (snapshot.app(appKey) === undefined) {
          return sendProblem(reply, 'notFound', `no app "${appKey}"`)
        }
        const refusal = streams.refusal()
        if (refusal !== undefined) {
          return sendProblem(
            reply,
            'streamsFull',
            refusal === 'closing'
              ? 'the instance is shutting down; reconnect'
              : 'this instance holds as many event streams as it may; reconnect later',
            { 'retry-after': String(STREAMS_FULL_RETRY_AFTER_S) },
          )
        }
        // HEAD learns what a GET would start, without a stream to hold open.
        if (request.method === 'HEAD') return reply.header('content-type', EVENT_STREAM).send()
        // From here the raw response is the stream's: fastify must not send anything on it.
        reply.hijack()
        streams.open({
          response: reply.raw,
          headers: reply.getHeaders(),
          appKey,
          caller,
          acceptLanguage: request.headers['accept-language'],
          lastEventId: firstValue(request.headers['last-event-id']),
        })
        // Timed to the stream's start: fastify's send, which times every other response, is skipped.
        metrics.httpRequestDuration.observe(
          request.routeOptions.url ?? 'unmatched',
          request.method,
          200,
          secondsSinceReceived(request.raw),
        )
        return reply
      })
    },
  )
}

const EVENT_STREAM = 'text/event-stream; charset=utf-8'

function firstValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header
}

const eventResponses = {
  200: { type: 'string', description: 'text/event-stream' },
  401: problemSchema,
  404: problemSchema,
  503: problemSchema,
}
