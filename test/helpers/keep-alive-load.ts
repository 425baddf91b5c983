import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

/** One request of a load, as its client saw it; times from performance.now(). */
export interface LoadRequest {
  readonly sentAtMs: number
  readonly settledAtMs: number
  /** Absent when the request failed. */
  readonly status?: number
  /** The answer's Connection header. */
  readonly connection?: string
  /** Why it failed: ECONNREFUSED, ECONNRESET, `socket hang up`, `no answer`. */
  readonly error?: string
  /** Sent on a connection that an earlier request of the load had used. */
  readonly reusedSocket: boolean
  readonly body?: string
}

export interface KeepAliveLoad {
  /** Every request so far, in the order they settled. */
  readonly requests: LoadRequest[]
  /** Stops sending and waits for the requests in flight. */
  stop(): Promise<void>
}

/** Far past any answer of the service: a request without one is lost. */
const ANSWER_TIMEOUT_MS = 15_000
/** Between two readiness polls: far more often than a load balancer checks, and still cheap. */
const POLL_INTERVAL_MS = 50

/**
 * `connections` loops, each sending GETs one after another through one
 * keep-alive agent (Node's http.Agent, as a service calling this one would),
 * so every loop reuses its connection. A loop stops at its first failure:
 * the service has gone.
 */
export function startKeepAliveLoad(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  connections: number,
): KeepAliveLoad {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const requests: LoadRequest[] = []
  let stopped = false
  const loops = Array.from({ length: connections }, async () => {
    while (!stopped) {
      const sent = await sendOne(agent, baseUrl, path, headers)
      requests.push(sent)
      if (sent.error !== undefined) return
    }
  })
  return {
    requests,
    async stop() {
      stopped = true
      await Promise.all(loops)
      agent.destroy()
    },
  }
}

function sendOne(
  agent: Agent | false,
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
): Promise<LoadRequest> {
  const { hostname, port } = new URL(baseUrl)
  const sentAtMs = performance.now()
  return new Promise((resolve) => {
    const outgoing = request({ host: hostname, port, path, headers, agent })
    const fail = (error: NodeJS.ErrnoException) =>
      resolve({
        sentAtMs,
        settledAtMs: performance.now(),
        error: error.code ?? error.message,
        reusedSocket: outgoing.reusedSocket,
      })
    outgoing.setTimeout(ANSWER_TIMEOUT_MS, () => outgoing.destroy(new Error('no answer')))
    outgoing.on('error', fail)
    outgoing.on('response', (incoming) => {
      const chunks: Buffer[] = []
      incoming.on('error', fail)
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
      incoming.on('end', () =>
        resolve({
          sentAtMs,
          settledAtMs: performance.now(),
          status: incoming.statusCode ?? 0,
          connection: incoming.headers.connection,
          reusedSocket: outgoing.reusedSocket,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      )
    })
    outgoing.end()
  })
}

/**
 * Polls `/readyz` as a load balancer's health check does, each poll on a
 * connection of its own, one after another until the first failure.
 */
export function startReadinessPoller(baseUrl: string): {
  readonly polls: LoadRequest[]
  stop(): Promise<void>
} {
  const polls: LoadRequest[] = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const poll = await sendOne(false, baseUrl, '/readyz', {})
      polls.push(poll)
      if (poll.error !== undefined) return
      await sleep(POLL_INTERVAL_MS)
    }
  })()
  return {
    polls,
    async stop() {
      stopped = true
      await loop
    },
  }
}
