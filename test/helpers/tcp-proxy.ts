import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy in front of PostgreSQL or the service, to inject network faults
 * neither can: `freeze()` makes every open connection silent without closing
 * it (a half-open connection), `cut()` resets them all, `hold()` accepts new
 * connections but passes nothing until `release()` (a connection being made,
 * for as long as a test needs). For HTTP/1.1 it can pick connections by their
 * last request line: `freeze(which)` silences those, `holdRequests(which)`
 * silences a connection as such a request arrives (a request never answered)
 * until `release()`. It counts the bytes it passes, which the bench reads as
 * bytes on the wire. `retarget(port)` sends new connections to another server,
 * as a Kubernetes Service does once a failover moved it (CloudNativePG's
 * `-rw`); with `cut()`, the old server's connections end too.
 */
export interface TcpProxy {
  readonly port: number
  /** Bytes passed so far: `up` from the clients to the target, `down` back (the bench's wire bytes). */
  readonly bytes: { readonly up: number; readonly down: number }
  /** Swaps the port in a connection string to go through the proxy. */
  route(url: string): string
  /** Silences the open connections whose last request line matches (every one, without `which`). */
  freeze(which?: (requestLine: string) => boolean): void
  cut(): void
  hold(): void
  /** From now on, a request whose request line matches is not passed on, and its connection goes silent. */
  holdRequests(which: (requestLine: string) => boolean): void
  /** How many requests `holdRequests` has held: a browser reports a request before its bytes arrive. */
  requestsHeld(): number
  release(): void
  /** New connections go to this port (on the same host) from now on; open ones are left as they are. */
  retarget(port: number): void
  close(): Promise<void>
}

/** The request line a chunk from an HTTP/1.1 client starts with, if it starts a request. */
const REQUEST_LINE = /^[A-Z]+ \S+ HTTP\/1\.1(?=\r\n)/

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{
    client: Socket
    upstream: Socket
    frozen: boolean
    lastRequest: string
  }>()
  const bytes = { up: 0, down: 0 }
  const held: Socket[] = []
  let holding = false
  let heldRequests: ((requestLine: string) => boolean) | undefined
  let requestsHeld = 0
  let upstreamPort = targetPort
  const pass = (client: Socket) => {
    const upstream = connect(upstreamPort, targetHost)
    const pair = { client, upstream, frozen: false, lastRequest: '' }
    pairs.add(pair)
    client.on('data', (chunk: Buffer) => {
      if (pair.frozen) return
      const requestLine = REQUEST_LINE.exec(chunk.toString('latin1', 0, 2048))?.[0]
      if (requestLine !== undefined) {
        pair.lastRequest = requestLine
        if (heldRequests?.(requestLine)) {
          requestsHeld += 1
          pair.frozen = true
          return
        }
      }
      bytes.up += chunk.length
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (pair.frozen) return
      bytes.down += chunk.length
      client.write(chunk)
    })
    const drop = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  }
  const server: Server = createServer((client) => {
    if (!holding) return pass(client)
    client.pause()
    held.push(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const cut = () => {
    for (const pair of pairs) {
      pair.client.resetAndDestroy()
      pair.upstream.destroy()
    }
    pairs.clear()
  }
  return {
    port,
    bytes,
    route(url) {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      return parsed.toString()
    },
    freeze(which) {
      for (const pair of pairs)
        if (which === undefined || which(pair.lastRequest)) pair.frozen = true
    },
    cut,
    hold() {
      holding = true
    },
    holdRequests(which) {
      heldRequests = which
    },
    requestsHeld: () => requestsHeld,
    release() {
      holding = false
      heldRequests = undefined
      for (const client of held.splice(0)) {
        pass(client)
        client.resume()
      }
    },
    retarget(port) {
      upstreamPort = port
    },
    async close() {
      for (const client of held.splice(0)) client.destroy()
      cut()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
