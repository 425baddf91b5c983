import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { Histogram } from 'prom-client'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Time the request when its head goes out, not when its response ends (an event stream). */
    timedToHead?: boolean
  }
}

type DurationHistogram = Histogram<'route' | 'method' | 'status_code'>
type Observe = (method: string, statusCode: number, elapsedMs: number) => void

/** The label of requests no route matched: their URLs would be unbounded label values. */
const UNMATCHED = 'unmatched'

/**
 * Times every response into shell_http_request_duration_seconds by fastify's clock. Each route
 * gets its own hook holding its template as the label: `request.routeOptions` would build an
 * object per request. A `timedToHead` route (an event stream, ending hours later) is timed when
 * its head goes out.
 */
export function timeRequests(app: FastifyInstance, histogram: DurationHistogram): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const observe = observerFor(histogram, route.url)
    const hook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      observe(request.method, reply.statusCode, reply.elapsedTime)
      done()
    }
    if (route.config?.timedToHead === true) {
      route.onSend = [
        ...toArray(route.onSend),
        (request, reply, payload, done) => {
          observe(request.method, reply.statusCode, reply.elapsedTime)
          done(null, payload)
        },
      ]
    } else {
      route.onResponse = [...toArray(route.onResponse), hook]
    }
  })
  const observeUnmatched = observerFor(histogram, UNMATCHED)
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) observeUnmatched(request.method, reply.statusCode, reply.elapsedTime)
    done()
  })
}

/** Observes into children of the histogram bound once per method and status. */
function observerFor(histogram: DurationHistogram, route: string): Observe {
  const children = new Map<string, ReturnType<DurationHistogram['labels']>>()
  return (method, statusCode, elapsedMs) => {
    const key = `${method} ${statusCode}`
    let child = children.get(key)
    if (child === undefined) {
      child = histogram.labels({ route, method, status_code: String(statusCode) })
      children.set(key, child)
    }
    child.observe(elapsedMs / 1000)
  }
}

function toArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
