import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'
import type { EventStreams } from '../events/event-streams.js'
import {
  API_PREFIX,
  type ApiRouteDeps,
  VARY_BY_CALLER,
  VARY_BY_CALLER_AND_LANGUAGE,
  varyHook,
} from '../http/api-conventions.js'
import { sendProblem } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import { registerAppsRoutes } from './apps.js'
import { registerEventRoutes } from './events.js'
import { registerShellRoutes } from './shell.js'

/** The API's paths under its prefix, as its route files declare them. */
const SHELL_PATH = '/shell/:appKey'
const EVENTS_PATH = '/shell/:appKey/events'
const APPS_PATH = '/apps'

const OTHER_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

const APP_KEY = new RegExp(APP_KEY_PATTERN)

/**
 * The API, one plugin under API_PREFIX. Its routes come in two groups by what their answers vary
 * with, each with its hooks in the order they run: Vary first, so that errors carry it; the
 * excess shed before any work; on one app's shell, the key; the token. Other methods than GET
 * and HEAD on its paths get a 405 from routes beside the groups: no hook of theirs runs.
 */
export function registerApi(
  app: FastifyInstance,
  deps: ApiRouteDeps & { readonly streams: EventStreams; readonly metrics: Metrics },
): void {
  app.register(
    async (api) => {
      api.register(async (shell) => {
        shell.addHook('onRequest', varyHook(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin))
        shell.addHook('onRequest', deps.shedExcess)
        shell.addHook('onRequest', rejectImpossibleAppKey)
        shell.addHook('onRequest', deps.authenticate)
        registerShellRoutes(shell, SHELL_PATH, deps)
        registerEventRoutes(shell, EVENTS_PATH, deps)
      })
      api.register(async (inventory) => {
        inventory.addHook('onRequest', varyHook(VARY_BY_CALLER, deps.varyByOrigin))
        inventory.addHook('onRequest', deps.shedExcess)
        inventory.addHook('onRequest', deps.authenticate)
        registerAppsRoutes(inventory, APPS_PATH, deps)
      })
      for (const path of [SHELL_PATH, EVENTS_PATH, APPS_PATH]) {
        api.route({
          method: OTHER_METHODS,
          url: path,
          // Answered before the body is parsed: an empty or malformed JSON body must not turn the 405 into a 400.
          onRequest: async (_request, reply) => sendMethodNotAllowed(reply),
          handler: (_request, reply) => sendMethodNotAllowed(reply),
        })
        // Each route's shed count starts at 0, so that a rate over it exists before the first shed.
        deps.metrics.httpShed.inc({ route: `${API_PREFIX}${path}` }, 0)
      }
    },
    { prefix: API_PREFIX },
  )
}

/** Before authentication: a key that cannot name an app is a 404 at once. */
const rejectImpossibleAppKey: onRequestHookHandler = (request, reply, done) => {
  const { appKey } = request.params as { appKey: string }
  if (APP_KEY.test(appKey)) done()
  else sendProblem(reply, 'notFound', 'no such app')
}

function sendMethodNotAllowed(reply: FastifyReply): FastifyReply {
  return sendProblem(reply, 'methodNotAllowed', 'only GET and HEAD are allowed', {
    allow: 'GET, HEAD',
  })
}
