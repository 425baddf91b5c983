import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify'
import type { Logger } from 'pino'
import { drainConnectionsOnClose } from './http/drain-connections.js'
import { sendProblem } from './http/problem.js'
import {
  describeClientError,
  registerProblemHandlers,
  writeClientErrorProblem,
} from './http/problem-handlers.js'
import { timeRequests } from './http/request-timing.js'
import type { Metrics } from './metrics.js'
import { sharedSchemas } from './openapi/response-schemas.js'
import { registerMetricsRoutes } from './routes/metrics.js'
import { registerProbeRoutes } from './routes/probes.js'
import type { SnapshotSource } from './snapshot/types.js'

export interface AdminAppDeps {
  readonly logger: Logger
  readonly metrics: Metrics
  /** The API's own source: both ports say the same about readiness. */
  readonly snapshots: SnapshotSource
  readonly logRequests: boolean
  readonly isShuttingDown: () => boolean
  readonly drainDeadlineMs?: number
}

/**
 * The admin port's HTTP face (ADMIN_PORT): `/healthz`, `/readyz` and `/metrics`, anything else a
 * 404 as on the API's port. Its listening socket is its own, so the kubelet's probes and
 * Prometheus' scrapes are accepted every turn of the event loop whatever waits on the API's
 * (libuv accepts one connection per listening socket per turn). No shedding, no CORS, no
 * OpenAPI document: nothing here is for the API's callers. Never listens: service.ts does.
 */
export function buildAdminApp(deps: AdminAppDeps): FastifyInstance {
  const app = Fastify({
    // As the API's instance (app.ts): fastify's logger only when requests are logged.
    ...(deps.logRequests ? { loggerInstance: deps.logger as FastifyBaseLogger } : {}),
    logController: new LogController({ disableRequestLogging: !deps.logRequests }),
    // During a shutdown's drain a probe still gets its answer (/readyz: 503 "shutting down").
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    frameworkErrors: (error, _request, reply) =>
      sendProblem(reply, 'badRequest', describeClientError(error)),
    clientErrorHandler: writeClientErrorProblem,
  })
  for (const schema of sharedSchemas) app.addSchema(schema)
  // The same histogram as the API's port: a probe is a probe on either.
  timeRequests(app, deps.metrics.httpRequestDuration)
  registerProblemHandlers(app, deps.logger)
  drainConnectionsOnClose(app, { logger: deps.logger, deadlineMs: deps.drainDeadlineMs })
  registerProbeRoutes(app, deps)
  registerMetricsRoutes(app, deps)
  return app
}
