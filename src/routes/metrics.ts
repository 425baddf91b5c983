import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../metrics.js'
import { NO_TOKEN } from '../openapi/documented-requests.js'
import { OTHER_ERRORS, textResponse } from '../openapi/documented-responses.js'
import type { SnapshotSource } from '../snapshot/types.js'

/**
 * `GET /metrics`: Prometheus text format, no token (scrapers are admitted by network policy), on
 * the API's port or, with ADMIN_PORT set, on that one only (admin-app.ts).
 */
export function registerMetricsRoutes(
  app: FastifyInstance,
  deps: { metrics: Metrics; snapshots: SnapshotSource },
): void {
  const { metrics, snapshots } = deps
  app.get('/metrics', { schema: metricsRoute }, async (_request, reply) => {
    // The age is a function of the scrape time, so it is set here rather than by the feed.
    const confirmedAt = snapshots.confirmedAt()
    if (confirmedAt !== undefined)
      metrics.snapshotAge.set((Date.now() - confirmedAt.getTime()) / 1000)
    reply.header('content-type', metrics.registry.contentType)
    return metrics.registry.metrics()
  })
}

const metricsRoute = {
  operationId: 'getMetrics',
  summary: 'Prometheus metrics',
  description:
    'With ADMIN_PORT set, served on that port only (with /healthz and /readyz) and absent here.',
  security: NO_TOKEN,
  response: {
    200: textResponse('Prometheus text exposition format (version 0.0.4).', 'text/plain'),
    default: OTHER_ERRORS,
  },
}
