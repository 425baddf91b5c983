import type { FastifyInstance } from 'fastify'
import type { SnapshotSource } from './snapshot-source.js'

/**
 * `/healthz`: the process serves. `/readyz`: a snapshot is loaded and the
 * instance is not shutting down. Neither depends on the identity provider,
 * and after the first load, losing the database keeps the instance ready.
 */
export function registerProbeRoutes(
  app: FastifyInstance,
  deps: { snapshots: SnapshotSource; isShuttingDown: () => boolean },
): void {
  app.get('/healthz', { schema: { response: { 200: healthSchema } } }, async () => ({
    status: 'ok',
  }))

  app.get(
    '/readyz',
    { schema: { response: { 200: readySchema, 503: notReadySchema } } },
    async (_request, reply) => {
      const snapshot = deps.snapshots.current()
      if (deps.isShuttingDown())
        return reply.code(503).send({ status: 'not_ready', reason: 'shutting down' })
      if (snapshot === undefined) {
        return reply
          .code(503)
          .send({ status: 'not_ready', reason: deps.snapshots.notReadyReason() })
      }
      return {
        status: 'ready',
        snapshot: {
          version: snapshot.version,
          loadedAt: snapshot.loadedAt.toISOString(),
          apps: snapshot.appKeys.length,
        },
      }
    },
  )
}

const healthSchema = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' } },
}
const readySchema = {
  type: 'object',
  required: ['status', 'snapshot'],
  properties: {
    status: { type: 'string' },
    snapshot: {
      type: 'object',
      required: ['version', 'loadedAt', 'apps'],
      properties: {
        version: { type: 'string' },
        loadedAt: { type: 'string' },
        apps: { type: 'integer' },
      },
    },
  },
}
const notReadySchema = {
  type: 'object',
  required: ['status', 'reason'],
  properties: { status: { type: 'string' }, reason: { type: 'string' } },
}
