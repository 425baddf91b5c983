import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TokenVerifier, VerifiedCaller } from '../auth/verify-token.js'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'
import { sendProblem } from '../http/problem.js'
import type { AppView, Snapshot, SnapshotSource } from '../snapshot/types.js'
import { authenticateThen } from './authenticate.js'
import { sendNotReady } from './tagged-response.js'

const APP_KEY = new RegExp(APP_KEY_PATTERN)

/** A request on one app, past every check the shell and its event stream share. */
export interface AppRequest {
  readonly caller: VerifiedCaller
  /** True when the token was verified by this very request, not found in the cache. */
  readonly verifiedNow: boolean
  readonly snapshot: Snapshot
  readonly view: AppView
}

/**
 * The checks before the shell or its event stream answers, in the order
 * their errors take precedence: a key that cannot name an app (404 without
 * verifying anything), the token (401, or 503 when the provider's keys
 * cannot be fetched), a snapshot (503), the app (404).
 */
export function answerAppRequest(
  deps: { readonly verifier: TokenVerifier; readonly snapshots: SnapshotSource },
  request: FastifyRequest<{ Params: { appKey: string } }>,
  reply: FastifyReply,
  respond: (appRequest: AppRequest) => FastifyReply,
): FastifyReply | Promise<FastifyReply> {
  const { appKey } = request.params
  if (!APP_KEY.test(appKey)) return sendProblem(reply, 'notFound', 'no such app')
  return authenticateThen(
    deps.verifier,
    request.headers.authorization,
    reply,
    (caller, verifiedNow) => {
      const snapshot = deps.snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, deps.snapshots.notReadyReason())
      const view = snapshot.app(appKey)
      if (view === undefined) return sendProblem(reply, 'notFound', `no app "${appKey}"`)
      return respond({ caller, verifiedNow, snapshot, view })
    },
  )
}
