import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify'
import type { Logger } from 'pino'
import type { LocalIssuer } from './auth/local-issuer.js'
import type { TokenVerifier } from './auth/verify-token.js'
import { createEventStreams } from './events/event-streams.js'
import type { ApiRouteDeps } from './http/api-conventions.js'
import { registerAppLookup } from './http/app-lookup.js'
import { registerAuthentication } from './http/authentication.js'
import { createCors } from './http/cors.js'
import { drainConnectionsOnClose } from './http/drain-connections.js'
import { createNegotiation } from './http/negotiation.js'
import { sendProblem } from './http/problem.js'
import {
  describeClientError,
  registerProblemHandlers,
  writeClientErrorProblem,
} from './http/problem-handlers.js'
import { createRepresentationCache } from './http/representation-cache.js'
import { timeRequests } from './http/request-timing.js'
import { registerShedding } from './http/shed-excess.js'
import { createStandingQueue, type StandingQueue } from './http/standing-queue.js'
import type { Metrics } from './metrics.js'
import { registerOpenApiDocument } from './openapi/document.js'
import { sharedSchemas } from './openapi/response-schemas.js'
import { registerApi } from './routes/api.js'
import { registerClientModuleRoutes } from './routes/client-modules.js'
import { registerLocalIssuerRoutes } from './routes/local-issuer.js'
import { registerMetricsRoutes } from './routes/metrics.js'
import { registerOpenApiRoutes } from './routes/openapi.js'
import { registerPreviewRoutes } from './routes/preview.js'
import { registerProbeRoutes } from './routes/probes.js'
import type { Caller } from './snapshot/caller.js'
import type { SnapshotSource } from './snapshot/types.js'

export interface AppDeps {
  readonly logger: Logger
  readonly metrics: Metrics
  readonly verifier: TokenVerifier<Caller>
  readonly snapshots: SnapshotSource
  /** One log line per request (LOG_REQUESTS); errors are logged either way. */
  readonly logRequests: boolean
  /** Open event streams allowed at once (EVENT_STREAMS_MAX). */
  readonly eventStreamsMax: number
  /** Origins whose pages may call the API from a browser (CORS_ORIGINS); none: no CORS. */
  readonly corsOrigins?: readonly string[]
  /** True once shutdown has begun: /readyz answers 503 so traffic drains away. */
  readonly isShuttingDown: () => boolean
  /** How long `close()` waits for open connections before closing them (DRAIN_DEADLINE_MS). */
  readonly drainDeadlineMs?: number
  /** Local mode only: the service's own issuer, served under /local-issuer, and the preview page. */
  readonly localIssuer?: LocalIssuer
  /** When the API's excess is shed; default: CoDel's rule on the event loop (http/standing-queue.ts). */
  readonly standingQueue?: StandingQueue
  /** ADMIN_PORT is set: /metrics is served there (admin-app.ts) and is a 404 here. */
  readonly metricsOnAdminPort?: boolean
}

/** Builds the HTTP face of the service. Never listens: main.ts and tests do. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const cors =
    deps.corsOrigins !== undefined && deps.corsOrigins.length > 0
      ? createCors(deps.corsOrigins)
      : undefined
  const app = Fastify({
    // Fastify's logger costs each request more than its answer: set only when requests are logged.
    // The error handler below logs errors either way.
    ...(deps.logRequests ? { loggerInstance: deps.logger as FastifyBaseLogger } : {}),
    logController: new LogController({ disableRequestLogging: !deps.logRequests }),
    // Requests already accepted are answered normally while the server drains on shutdown.
    return503OnClosing: false,
    // Keep-alive connections that are idle are closed at shutdown; busy ones finish first
    // (drainConnectionsOnClose below closes them after their answer, or at its deadline).
    forceCloseConnections: 'idle',
    frameworkErrors: (error, request, reply) => {
      // No hook runs for these; a page on a listed origin still gets to read the problem.
      cors?.addHeaders(request, reply)
      // The router's only parameter is an app key: one past its length limit names no app.
      if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') sendProblem(reply, 'notFound', 'no such app')
      else sendProblem(reply, 'badRequest', describeClientError(error))
    },
    // Requests the HTTP parser refuses (a malformed request line, oversized headers) never reach a route.
    clientErrorHandler: writeClientErrorProblem,
  })

  for (const schema of sharedSchemas) app.addSchema(schema)
  timeRequests(app, deps.metrics.httpRequestDuration)
  if (cors !== undefined) app.addHook('onRequest', cors.onRequest)

  registerProblemHandlers(app, deps.logger)

  deps.metrics.eventStreamsMax.set(deps.eventStreamsMax)
  const streams = createEventStreams({
    snapshots: deps.snapshots,
    metrics: deps.metrics,
    logger: deps.logger,
    max: deps.eventStreamsMax,
  })
  // Streams end before the server closes, so that they never hold up the drain.
  app.addHook('preClose', (done) => {
    streams.close()
    done()
  })
  drainConnectionsOnClose(app, { logger: deps.logger, deadlineMs: deps.drainDeadlineMs })

  // Each made once per instance: nothing is shared with another instance in the process.
  const api: ApiRouteDeps = {
    snapshots: deps.snapshots,
    authenticate: registerAuthentication(app, deps.verifier),
    shedExcess: registerShedding(app, {
      queue: deps.standingQueue ?? createStandingQueue(),
      metrics: deps.metrics,
    }),
    lookup: registerAppLookup(app, deps.snapshots),
    negotiation: createNegotiation(),
    representations: createRepresentationCache(),
    varyByOrigin: cors !== undefined,
  }
  registerOpenApiDocument(app)
  registerApi(app, { ...api, streams, metrics: deps.metrics })
  // In a plugin, as the API is: declared once @fastify/swagger is there to learn them.
  app.register(async (routes) => {
    registerProbeRoutes(routes, deps)
    if (deps.metricsOnAdminPort !== true) registerMetricsRoutes(routes, deps)
    registerClientModuleRoutes(routes, api)
    const { localIssuer } = deps
    if (localIssuer !== undefined) {
      registerLocalIssuerRoutes(routes, { localIssuer })
      registerPreviewRoutes(routes, api)
    }
    registerOpenApiRoutes(routes)
  })
  return app
}
