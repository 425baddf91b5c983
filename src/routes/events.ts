import type { FastifyInstance } from 'fastify'
import {
  CLOSING_RETRY_AFTER_S,
  type EventStreams,
  STREAMS_FULL_RETRY_AFTER_S,
} from '../events/event-streams.js'
import { EVENT_STREAM_CONTENT_TYPE } from '../events/sse-text.js'
import type { ApiRouteDeps } from '../http/api-conventions.js'
import { firstHeaderValue } from '../http/header-values.js'
import { sendProblem } from '../http/problem.js'
import {
  APP_KEY_PARAMS,
  BEARER_TOKEN,
  documentRequest,
  EVENTS_REQUEST_HEADERS,
} from '../openapi/documented-requests.js'
import {
  API_ERRORS,
  EVENT_STREAM_HEADERS,
  NO_SUCH_APP,
  problemResponse,
  RETRY_AFTER_HEADERS,
  textResponse,
} from '../openapi/documented-responses.js'
import type { AppView, Snapshot } from '../snapshot/types.js'

/** Server-Sent Events of the caller's shell ETag, with the shell's hooks (routes/api.ts), language and errors. */
export function registerEventRoutes(
  app: FastifyInstance,
  path: string,
  deps: ApiRouteDeps & { readonly streams: EventStreams },
): void {
  const { negotiation, streams } = deps
  app.get<{ Params: { appKey: string } }>(
    path,
    {
      schema: {
        operationId: 'followShell',
        summary: "Server-Sent Events: the caller's shell ETag, now and each time it changes",
        description: EVENTS_DESCRIPTION,
        security: BEARER_TOKEN,
        response: eventResponses,
      },
      // Its response ends hours later: timed to its start (http/request-timing.ts).
      config: {
        ...documentRequest({ params: APP_KEY_PARAMS, headers: EVENTS_REQUEST_HEADERS }),
        timedToHead: true,
      },
      preHandler: deps.lookup.appView,
    },
    (request, reply) => {
      const view = request.appView
      const refusal = streams.refusal()
      if (refusal === 'closing') {
        return sendProblem(reply, 'streamsFull', 'the instance is shutting down; reconnect', {
          'retry-after': String(CLOSING_RETRY_AFTER_S),
        })
      }
      if (refusal === 'full') {
        return sendProblem(
          reply,
          'streamsFull',
          'this instance holds as many event streams as it may; reconnect later',
          { 'retry-after': String(STREAMS_FULL_RETRY_AFTER_S) },
        )
      }
      const { headers } = request
      const languages = negotiation.languages(headers['accept-language'])
      reply
        .header('cache-control', 'no-cache')
        // nginx and its kin buffer responses unless told not to; an event must not wait.
        .header('x-accel-buffering', 'no')
        .header('content-language', view.localeFor(languages))
        .type(EVENT_STREAM_CONTENT_TYPE)
      // HEAD learns what a GET would start, without a stream to hold open.
      if (request.method === 'HEAD') return reply.send()
      const body = streams.open({
        view,
        caller: request.caller,
        languages,
        coding: negotiation.coding(headers['accept-encoding']),
        lastEventId: firstHeaderValue(headers['last-event-id']),
      })
      // The request lives as long as its stream: what the lookup decorated it with would too,
      // the view past the view cache's bound (the stream follows it by its key) and the snapshot
      // past the next reload.
      request.appView = null as unknown as AppView
      request.snapshot = null as unknown as Snapshot
      return reply.send(body)
    },
  )
}

const eventResponses = {
  200: textResponse(
    'The stream: shell events, keep-alive comments, gone.',
    'text/event-stream',
    EVENT_STREAM_HEADERS,
  ),
  ...API_ERRORS,
  404: NO_SUCH_APP,
  503: problemResponse(
    "No snapshot is loaded yet, the identity provider's keys cannot be fetched, the instance is answering as many requests as it can, it holds as many streams as it may (EVENT_STREAMS_MAX), or it has ended its streams for a shutdown (Retry-After: 1).",
    RETRY_AFTER_HEADERS,
  ),
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
  'A comment line `: keep-alive` comes at least every 15 seconds. `event: gone` (data `{"app":"<key>"}`) means the app was deleted; the stream then ends. The stream also ends at the token\'s `exp` and when the instance shuts down: reconnect with a fresh token and Last-Event-ID.',
].join('\n')
