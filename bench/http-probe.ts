import { Agent, request } from 'node:http'

export interface ProbeResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Buffer
}

/**
 * Single GETs over one kept-alive connection per agent: warming caches,
 * recording the responses the baseline replays, polling for a new ETag.
 * node:http rather than fetch, for a poll that costs well under a millisecond.
 */
export function createHttpProbe(baseUrl: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  const origin = new URL(baseUrl)
  return {
    get(path: string, headers: Record<string, string> = {}): Promise<ProbeResponse> {
      return new Promise((resolve, reject) => {
        const outgoing = request(
          { agent, host: origin.hostname, port: origin.port, path, method: 'GET', headers },
          (incoming) => {
            const chunks: Buffer[] = []
            incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
            incoming.on('error', reject)
            incoming.on('end', () => {
              const flat: Record<string, string> = {}
              for (const [name, value] of Object.entries(incoming.headers)) {
                if (value !== undefined)
                  flat[name] = Array.isArray(value) ? value.join(', ') : value
              }
              resolve({
                status: incoming.statusCode ?? 0,
                headers: flat,
                body: Buffer.concat(chunks),
              })
            })
          },
        )
        outgoing.on('error', reject)
        outgoing.end()
      })
    },
    close(): void {
      agent.destroy()
    },
  }
}

export type HttpProbe = ReturnType<typeof createHttpProbe>
