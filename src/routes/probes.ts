import type { FastifyInstance } from 'fastify'
import { NO_TOKEN } from '../openapi/documented-requests.js'
import { jsonResponse, OTHER_ERRORS } from '../openapi/documented-responses.js'
import type { SnapshotSource } from '../snapshot/types.js'

/**
 * Neither probe depends on the identity provider, nor, after the first load, on the database.
 * Registered on the API's port and, with ADMIN_PORT set, on that one too (admin-app.ts).
 */
export function registerProbeRoutes(
  app: FastifyInstance,
  deps: { snapshots: SnapshotSource; isShuttingDown: () => boolean },
): void {
  app.get('/healthz', { schema: healthRoute }, async () => ({ status: 'ok' }))

  app.get('/readyz', { schema: readyRoute }, async (_request, reply) => {
    const snapshot = deps.snapshots.current()
    if (deps.isShuttingDown())
      return reply.code(503).send({ status: 'not_ready', reason: 'shutting down' })
    if (snapshot === undefined)
      return reply.code(503).send({ status: 'not_ready', reason: deps.snapshots.notReadyReason() })
    return {
      status: 'ready',
      snapshot: {
        version: snapshot.version,
        loadedAt: snapshot.loadedAt.toISOString(),
        // Never before loadedAt, whatever the feed holds (the contract).
        confirmedAt: new Date(
          Math.max(snapshot.loadedAt.getTime(), deps.snapshots.confirmedAt()?.getTime() ?? 0),
        ).toISOString(),
        apps: snapshot.appKeys.length,
        source: deps.snapshots.origin() ?? 'database',
      },
    }
  })
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
      required: ['version', 'loadedAt', 'confirmedAt', 'apps', 'source'],
      properties: {
        version: { type: 'string' },
        // When the data were read from the database.
        loadedAt: { type: 'string' },
        // When they were last found equal to the database's (from the file: its confirmation).
        confirmedAt: { type: 'string' },
        apps: { type: 'integer' },
        // "file": the snapshot this instance kept, served until the database answers.
        source: { type: 'string', enum: ['database', 'file'] },
      },
    },
  },
}
const notReadySchema = {
  type: 'object',
  required: ['status', 'reason'],
  properties: { status: { type: 'string' }, reason: { type: 'string' } },
}

const ON_ADMIN_PORT_TOO =
  'Also served on ADMIN_PORT when it is set, a port of its own that no load on this one holds up.'

const healthRoute = {
  operationId: 'getHealth',
  summary: 'Liveness: the process serves',
  description: ON_ADMIN_PORT_TOO,
  security: NO_TOKEN,
  response: {
    200: jsonResponse('The process serves.', healthSchema),
    default: OTHER_ERRORS,
  },
}
const readyRoute = {
  operationId: 'getReadiness',
  summary: 'Readiness: a snapshot is loaded and the instance is not shutting down',
  description: ON_ADMIN_PORT_TOO,
  security: NO_TOKEN,
  response: {
    200: jsonResponse('A snapshot is loaded: the instance answers the API.', readySchema),
    503: jsonResponse(
      'No snapshot is loaded yet, or the instance is shutting down.',
      notReadySchema,
    ),
    default: OTHER_ERRORS,
  },
}
