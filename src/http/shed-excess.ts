import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { Metrics } from '../metrics.js'
import { sendProblem } from './problem.js'
import type { StandingQueue } from './standing-queue.js'

/**
 * A shed client is told to come back after 2 to 5 s, drawn per answer, so that the clients turned
 * away in one second come back spread over four (the client module waits as told).
 */
const RETRY_AFTER_MIN_S = 2
const RETRY_AFTER_SPREAD_S = 4

const DETAIL = 'the instance is answering as many requests as it can; try again after Retry-After'

/**
 * The `onRequest` hook that answers a 503 at once while `queue` says API work stands in a queue.
 * A turn of API work runs from the first request or connection met in it to its end (setImmediate
 * runs after the turn's I/O). The 503 closes its connection: connections are accepted one a turn,
 * so retries cannot crowd out the requests being served.
 */
export function registerShedding(
  app: FastifyInstance,
  options: { readonly queue: StandingQueue; readonly metrics: Metrics },
): onRequestHookHandler {
  const { queue } = options
  const { httpShed: shed, httpQueueStanding } = options.metrics
  httpQueueStanding.set(0)

  let turnStartMs: number | undefined
  const endTurn = () => {
    const nowMs = performance.now()
    queue.recordTurn(turnStartMs as number, nowMs)
    turnStartMs = undefined
    httpQueueStanding.set(queue.isStanding(nowMs) ? 1 : 0)
  }
  /** How far into the turn under way `nowMs` is; starts a turn when none is. */
  const noteTurn = (nowMs: number): number => {
    if (turnStartMs === undefined) {
      turnStartMs = nowMs
      setImmediate(endTurn)
    }
    return nowMs - turnStartMs
  }

  const shedExcess: onRequestHookHandler = (request, reply, done) => {
    const nowMs = performance.now()
    if (!queue.shouldShed(noteTurn(nowMs), nowMs)) {
      done()
      return
    }
    shed.inc({ route: request.routeOptions.url ?? '' })
    const retryAfterS = RETRY_AFTER_MIN_S + Math.floor(Math.random() * RETRY_AFTER_SPREAD_S)
    sendProblem(reply, 'overloaded', DETAIL, {
      'retry-after': String(retryAfterS),
      connection: 'close',
    })
  }

  // A turn that accepts a connection is API work too: a storm of connections is a queue.
  app.server.on('connection', () => noteTurn(performance.now()))
  return shedExcess
}
