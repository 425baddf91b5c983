import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'

/**
 * How long `app.close()` waits for its connections before it closes the
 * rest. Answers come from memory in milliseconds; what can hold a connection
 * longer is a request waiting on the identity provider's keys (whose fetch
 * gives up after 5 s) or a client that reads slowly. Half of the 10 s a
 * shutdown may take after its delay (docs/operations.md, "Deploys and
 * shutdown"), so the database has the other half.
 */
export const DRAIN_DEADLINE_MS = 5_000

/**
 * What the server does with its connections once `app.close()` begins, in
 * fastify's own hooks. `server.close()` stops accepting and closes the idle
 * keep-alive connections, and fastify answers what is routed afterwards with
 * `Connection: close`. But in Node 20 a connection whose request was already
 * in its handler is idle again after the answer and stays open until the
 * keep-alive timeout (72 s in fastify), far past a shutdown's bound. So
 * while closing, every answer says `Connection: close` (Node then closes its
 * connection once it is sent), and whatever is still open at the deadline (a
 * client that reads too slowly, a request that never finishes arriving) is
 * closed.
 */
export function drainConnectionsOnClose(
  app: FastifyInstance,
  options: { readonly logger: Logger; readonly deadlineMs?: number },
): void {
  const { logger, deadlineMs = DRAIN_DEADLINE_MS } = options
  let closing = false
  let deadline: NodeJS.Timeout | undefined

  app.addHook('preClose', (done) => {
    closing = true
    deadline = setTimeout(() => {
      logger.warn(
        { deadlineMs },
        'connections still open at the drain deadline: closing them, answered or not',
      )
      app.server.closeAllConnections()
    }, deadlineMs)
    done()
  })

  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })

  // Runs once the server has closed, every connection with it.
  app.addHook('onClose', (_instance, done) => {
    clearTimeout(deadline)
    done()
  })
}
