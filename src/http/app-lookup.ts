import type {
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
  onRequestHookHandler,
} from 'fastify'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'
import type { AppView, Snapshot, SnapshotSource } from '../snapshot/types.js'
import { type ApiRouteDeps, VARY_BY_CALLER_AND_LANGUAGE, varyHook } from './api-conventions.js'
import { sendProblem } from './problem.js'

/** Seconds a client should wait while the first snapshot loads. */
const NOT_READY_RETRY_AFTER_S = '2'
const APP_KEY = new RegExp(APP_KEY_PATTERN)

/** Before authentication: a key that cannot name an app is a 404 at once. */
const rejectImpossibleAppKey: onRequestHookHandler = (request, reply, done) => {
  const { appKey } = request.params as { appKey: string }
  if (APP_KEY.test(appKey)) done()
  else sendProblem(reply, 'notFound', 'no such app')
}

/**
 * The `onRequest` hooks of a route on one app's shell (its GET and its events, whose tags
 * follow the GET's), in their order: Vary first, so errors carry it; the key; the token.
 */
export function appShellHooks(
  deps: ApiRouteDeps,
): (onRequestHookHandler | onRequestAsyncHookHandler)[] {
  return [
    varyHook(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin),
    rejectImpossibleAppKey,
    deps.authenticate,
  ]
}

/** The snapshot in service; undefined once a 503 is sent, before the first one is loaded. */
export function findSnapshot(snapshots: SnapshotSource, reply: FastifyReply): Snapshot | undefined {
  const snapshot = snapshots.current()
  if (snapshot === undefined) {
    sendProblem(reply, 'notReady', `no snapshot is loaded yet: ${snapshots.notReadyReason()}`, {
      'retry-after': NOT_READY_RETRY_AFTER_S,
    })
  }
  return snapshot
}

/** The view of the request's app; undefined once a 503 (no snapshot) or 404 (no such app) is sent. */
export function findAppView(
  snapshots: SnapshotSource,
  request: FastifyRequest<{ Params: { appKey: string } }>,
  reply: FastifyReply,
): AppView | undefined {
  const snapshot = findSnapshot(snapshots, reply)
  if (snapshot === undefined) return undefined
  const { appKey } = request.params
  const view = snapshot.app(appKey)
  if (view === undefined) sendProblem(reply, 'notFound', `no app "${appKey}"`)
  return view
}
