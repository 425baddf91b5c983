import type { FastifyInstance, FastifyReply, RouteOptions } from 'fastify'
import { API_PREFIX } from './api-conventions.js'
import { sendProblem } from './problem.js'

const OTHER_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * Other methods than GET and HEAD on an API path get a 405 with `Allow`, from a sibling route
 * added as each GET route is declared. Register before the routes.
 */
export function refuseOtherMethodsOnApiRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', function addSibling(this: FastifyInstance, route: RouteOptions) {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!route.url.startsWith(API_PREFIX) || !methods.includes('GET')) return
    this.route({
      method: OTHER_METHODS,
      url: route.url,
      // Answered before the body is parsed: an empty or malformed JSON body must not turn the 405 into a 400.
      onRequest: async (_request, reply) => sendMethodNotAllowed(reply),
      handler: (_request, reply) => sendMethodNotAllowed(reply),
    })
  })
}

function sendMethodNotAllowed(reply: FastifyReply): FastifyReply {
  return sendProblem(reply, 'methodNotAllowed', 'only GET and HEAD are allowed', {
    allow: 'GET, HEAD',
  })
}
