import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'

/**
 * How long `app.close()` waits for its connections: a key fetch gives up after 5 s, and it is half
 * the 10 s a shutdown may take (docs/operations.md, "Deploys and shutdown"), the database the rest.
 */
export const DRAIN_DEADLINE_MS = 5_000

/**
 * Once `app.close()` begins, every answer says `Connection: close`, and what is still open at the
 * deadline is closed: in Node 20 a connection busy when `server.close()` ran stays open until the
 * keep-alive timeout (72 s in fastify), far past a shutdown's bound.
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

  app.addHook('onClose', (_instance, done) => {
    clearTimeout(deadline)
    done()
  })
}
