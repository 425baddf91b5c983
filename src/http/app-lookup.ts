import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { AppView, Snapshot, SnapshotSource } from '../snapshot/types.js'
import { sendProblem } from './problem.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The snapshot in service, on the routes that run a lookup's preHandler. */
    snapshot: Snapshot
    /** The requested app's view, on the routes that run `appView`. */
    appView: AppView
  }
}

/** The preHandlers that find what a route answers from, so that its handler only sends. */
export interface AppLookup {
  /** Sets `request.snapshot`; before the first snapshot is loaded, a 503 with Retry-After. */
  readonly snapshot: preHandlerHookHandler
  /** Sets `request.snapshot` and `request.appView` of `:appKey`; a 503 as above, or a 404. */
  readonly appView: preHandlerHookHandler
}

/** Seconds a client should wait while the first snapshot loads. */
const NOT_READY_RETRY_AFTER_S = '2'

export function registerAppLookup(app: FastifyInstance, snapshots: SnapshotSource): AppLookup {
  app.decorateRequest('snapshot', null as unknown as Snapshot)
  app.decorateRequest('appView', null as unknown as AppView)

  function takeSnapshot(request: FastifyRequest, reply: FastifyReply): boolean {
    const snapshot = snapshots.current()
    if (snapshot === undefined) {
      const detail = `no snapshot is loaded yet: ${snapshots.notReadyReason()}`
      sendProblem(reply, 'notReady', detail, { 'retry-after': NOT_READY_RETRY_AFTER_S })
      return false
    }
    request.snapshot = snapshot
    return true
  }

  return {
    snapshot(request, reply, done) {
      if (takeSnapshot(request, reply)) done()
    },

    appView(request, reply, done) {
      if (!takeSnapshot(request, reply)) return
      const { appKey } = request.params as { appKey: string }
      const view = request.snapshot.app(appKey)
      if (view === undefined) {
        sendProblem(reply, 'notFound', `no app "${appKey}"`)
        return
      }
      request.appView = view
      done()
    },
  }
}
