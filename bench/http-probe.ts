import { Agent, request } from 'node:http'

export interface ProbeResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Buffer
}

/**
 * GETs over kept-alive connections: warming caches, recording what the
 * baseline replays, polling for a new ETag. node:http rather than fetch,
 * which adds headers of its own (Accept-Language among them) and costs more
 * per poll.
 */
export function createHttpProbe(baseUrl: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  const { hostname, port } = new URL(baseUrl)
  return {
    get: (path: string, headers: Record<string, string> = {}) =>
      new Promise<ProbeResponse>((resolve, reject) => {
        const outgoing = request({ agent, hostname, port, path, headers }, (incoming) => {
          const chunks: Buffer[] = []
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
          incoming.on('error', reject)
          incoming.on('end', () => {
            // Every header but set-cookie is one string, and these responses set no cookie.
            const flat = incoming.headers as Record<string, string>
            resolve({
              status: incoming.statusCode ?? 0,
              headers: flat,
              body: Buffer.concat(chunks),
            })
          })
        })
        outgoing.on('error', reject).end()
      }),
    close: () => agent.destroy(),
  }
}
