import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Histogram } from 'prom-client'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Time the request when its head goes out, not when its response ends (an event stream). */
    timedToHead?: boolean
  }
}

type DurationHistogram = Histogram<'route' | 'method' | 'status_code'>

/** The label of requests no route matched: their URLs would be unbounded label values. */
const UNMATCHED = 'unmatched'

/**
 * Times every response into shell_http_request_duration_seconds, labelled with its route's
 * template; a `timedToHead` route (an event stream, ending hours later) when its head goes out.
 */
export function timeRequests(app: FastifyInstance, histogram: DurationHistogram): void {
  // Children bound once per route, method and status.
  const children = new Map<string, ReturnType<DurationHistogram['labels']>>()
  const observe = (url: string | undefined, method: string, reply: FastifyReply) => {
    const route = url ?? UNMATCHED
    const { statusCode } = reply
    const key = `${route} ${method} ${statusCode}`
    let child = children.get(key)
    if (child === undefined) {
      child = histogram.labels({ route, method, status_code: String(statusCode) })
      children.set(key, child)
    }
    child.observe(reply.elapsedTime / 1000)
  }
  app.addHook('onSend', (request, reply, payload, done) => {
    const { url, config } = request.routeOptions
    if (config.timedToHead === true) observe(url, request.method, reply)
    done(null, payload)
  })
  app.addHook('onResponse', (request, reply, done) => {
    const { url, config } = request.routeOptions
    if (config.timedToHead !== true) observe(url, request.method, reply)
    done()
  })
}
