import type { FastifyInstance } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { APP_KEY_PATTERN } from '../db/vocabulary.js'
import { type EventStreams, STREAMS_FULL_RETRY_AFTER_S } from '../events/event-streams.js'
import { EVENT_STREAM_CONTENT_TYPE } from '../events/stream-response.js'
import { sendProblem } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import { secondsSinceReceived } from '../request-duration-histogram.js'
import type { SnapshotSource } from '../snapshot/types.js'
import { authenticateThen } from './authenticate.js'
import {
  APP_KEY_PARAMS,
  BEARER_TOKEN,
  documentRequest,
  EVENTS_REQUEST_HEADERS,
} from './documented-requests.js'
import {
  CHALLENGE_HEADERS,
  EVENT_STREAM_HEADERS,
  OTHER_ERRORS,
  problemResponse,
  RETRY_AFTER_HEADERS,
  textResponse,
} from './documented-responses.js'
import { sendNotReady, VARY_BY_CALLER_AND_LANGUAGE, varyWithOrigin } from './tagged-response.js'

const APP_KEY = new RegExp(APP_KEY_PATTERN)
const EVENTS_ROUTE = '/api/v1/shell/:appKey/events'

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
    /** CORS is on: the stream varies with Origin too. */
    varyByOrigin: boolean
  },
): void {
  const { verifier, snapshots, streams, metrics } = deps
  const vary = varyWithOrigin(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin)
  app.get<{ Params: { appKey: string } }>(
    EVENTS_ROUTE,
    {
      schema: {
        operationId: 'followShell',
        summary: "Server-Sent Events: the caller's shell ETag, now and each time it changes",
        description: EVENTS_DESCRIPTION,
        security: BEARER_TOKEN,
        response: eventResponses,
      },
      config: documentRequest({ params: APP_KEY_PARAMS, headers: EVENTS_REQUEST_HEADERS }),
    },
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
        reply.header('vary', vary)
        // HEAD learns what a GET would start, without a stream to hold open.
        if (request.method === 'HEAD')
          return reply.header('content-type', EVENT_STREAM_CONTENT_TYPE).send()
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
          EVENTS_ROUTE,
          request.method,
          200,
          secondsSinceReceived(request.raw),
        )
        return reply
      })
    },
  )
}

function firstValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header
}

const eventResponses = {
  200: textResponse(
    'The stream: shell events, keep-alive comments, gone.',
    'text/event-stream',
    EVENT_STREAM_HEADERS,
  ),
  401: problemResponse('No Bearer token, or one that fails verification.', CHALLENGE_HEADERS),
  404: problemResponse('No app has this key.'),
  503: problemResponse(
    "No snapshot is loaded yet, the identity provider's keys cannot be fetched, or the instance holds as many streams as it may (EVENT_STREAMS_MAX).",
    RETRY_AFTER_HEADERS,
  ),
  default: OTHER_ERRORS,
}

/** The events are text, not a schema: the operation's description is where a reader finds them. */
const EVENTS_DESCRIPTION = [
  'Errors come before the stream starts, as for the shell. Then, at once unless Last-Event-ID equals the current tag:',
  '',
  '```',
  'event: shell',
  'id: <tag>',
  'data: {"etag":"\\"<tag>\\""}',
  '```',
  '',
  'where `"<tag>"` is the ETag that `GET /api/v1/shell/{appKey}` returns for the same token and language. Another `shell` event follows each time that ETag changes, and only then; a burst of changes gives a few events, the last with the current tag.',
  '',
  'A comment line `: keep-alive` comes at least every 30 seconds. `event: gone` (data `{"app":"<key>"}`) means the app was deleted; the stream then ends. The stream also ends at the token\'s `exp` and when the instance shuts down: reconnect with a fresh token and Last-Event-ID.',
].join('\n')
