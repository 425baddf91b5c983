import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAbortHookHandler,
  onRequestHookHandler,
  onSendHookHandler,
  RouteOptions,
} from 'fastify'
import type { Metrics } from '../metrics.js'
import type { ConcurrencyLimit } from './concurrency-limit.js'
import { sendProblem } from './problem.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request holds a slot of the concurrency limit. */
    admitted: boolean
  }
}

/**
 * A shed client is told to come back after 2 to 5 s, drawn per answer, so that the clients turned
 * away in one second come back spread over four (the client module waits as told).
 */
const RETRY_AFTER_MIN_S = 2
const RETRY_AFTER_SPREAD_S = 4

/**
 * An answered request's slot is given back at the end of the turn, or after this long: with over
 * a thousand connections ready at once, libuv polls up to 48 rounds of 1,024 sockets before the
 * turn ends, and slots held for all of it would serve a handful of requests a second.
 */
const HOLD_MAX_MS = 20

const DETAIL = 'the instance is answering as many requests as it can; try again after Retry-After'

/**
 * Returns the `onRequest` hook that admits a request within `limit` or answers it at once with a
 * 503, and sees that each admitted request gives its slot back. A slot is held until the answer
 * is sent (an event stream: its head) and then to the end of that turn of the event loop: the
 * answers made within one turn are that turn's work, whether they waited for the thread pool or
 * not. Only the routes that run the hook count in shell_http_shed_total, each from 0.
 */
export function registerShedding(
  app: FastifyInstance,
  options: { readonly limit: ConcurrencyLimit; readonly metrics: Metrics },
): onRequestHookHandler {
  const { limit } = options
  const { httpShed: shed, httpConcurrencyLimit } = options.metrics
  httpConcurrencyLimit.set(limit.limit)
  app.decorateRequest('admitted', false)

  // The turn of the event loop under way: when its first API request was met, and the slots its
  // answers hold until it ends, or until HOLD_MAX_MS have passed since they were last given back.
  let turnStartMs: number | undefined
  let heldSinceMs = 0
  let accepted = false
  let holding = 0
  const releaseHeld = (nowMs: number) => {
    for (; holding > 0; holding -= 1) limit.release()
    heldSinceMs = nowMs
  }
  const endTurn = () => {
    const nowMs = performance.now()
    limit.recordTurn({ durationMs: nowMs - (turnStartMs as number), accepted }, nowMs)
    releaseHeld(nowMs)
    turnStartMs = undefined
    accepted = false
    httpConcurrencyLimit.set(limit.limit)
  }
  const noteTurn = (): number => {
    const nowMs = performance.now()
    if (turnStartMs === undefined) {
      turnStartMs = nowMs
      heldSinceMs = nowMs
      setImmediate(endTurn)
    } else if (holding > 0 && nowMs - heldSinceMs >= HOLD_MAX_MS) {
      releaseHeld(nowMs)
    }
    return nowMs
  }
  const release = (request: FastifyRequest) => {
    if (!request.admitted) return
    request.admitted = false
    noteTurn()
    holding += 1
  }
  const releaseOnSend: onSendHookHandler = (request, _reply, payload, done) => {
    release(request)
    done(null, payload)
  }
  // A client that leaves before its answer: no onSend.
  const releaseOnAbort: onRequestAbortHookHandler = (request, done) => {
    release(request)
    done()
  }

  const shedExcess: onRequestHookHandler = (request, reply, done) => {
    if (limit.tryAcquire(noteTurn())) {
      request.admitted = true
      done()
      return
    }
    shed.inc({ route: request.routeOptions.url ?? '' })
    sendShed(reply)
  }

  // libuv accepts one connection per turn: turns that do are how the limit sees a backlog.
  app.server.on('connection', () => {
    noteTurn()
    accepted = true
  })

  app.addHook('onRoute', (route: RouteOptions) => {
    // A GET's HEAD route comes with the GET's options, hooks added here included.
    const onSend = toArray(route.onSend)
    if (!toArray(route.onRequest).includes(shedExcess) || onSend.includes(releaseOnSend)) return
    shed.inc({ route: route.url }, 0)
    route.onSend = [...onSend, releaseOnSend]
    route.onRequestAbort = [...toArray(route.onRequestAbort), releaseOnAbort]
  })
  return shedExcess
}

function sendShed(reply: FastifyReply): FastifyReply {
  const retryAfterS = RETRY_AFTER_MIN_S + Math.floor(Math.random() * RETRY_AFTER_SPREAD_S)
  return sendProblem(reply, 'overloaded', DETAIL, { 'retry-after': String(retryAfterS) })
}

function toArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
