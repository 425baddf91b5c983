import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'

/**
 * How long `app.close()` waits for its connections before it closes the rest: enough for a key
 * fetch (which gives up after 5 s) or a slow reader, and half of the 10 s a shutdown may take
 * after its delay (docs/operations.md, "Deploys and shutdown"), the database the other half.
 */
export const DRAIN_DEADLINE_MS = 5_000

/**
 * Once `app.close()` begins, every answer says `Connection: close` and whatever is still open
 * at the deadline is closed: in Node 20 a connection whose request was in its handler when
 * `server.close()` closed the idle ones stays open until the keep-alive timeout (72 s in
 * fastify), far past a shutdown's bound.
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
