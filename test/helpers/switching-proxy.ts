import { connect, createServer, type Socket } from 'node:net'

/**
 * A TCP proxy that plays an address a failover moves (a Kubernetes Service such as
 * CloudNativePG's `-rw`): `switchTo` sends new connections to another server and cuts the open
 * ones, as the Service's endpoints change and the old primary's connections end.
 */
export interface SwitchingProxy {
  readonly port: number
  /** Swaps host and port in a connection string to go through the proxy. */
  route(url: string): string
  switchTo(targetPort: number): void
  close(): Promise<void>
}

export async function startSwitchingProxy(targetPort: number): Promise<SwitchingProxy> {
  let target = targetPort
  const open = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1')
    open.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    const drop = () => {
      open.delete(client)
      open.delete(upstream)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const cut = () => {
    for (const socket of open) socket.destroy()
    open.clear()
  }
  return {
    port,
    route(url) {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      return parsed.toString()
    },
    switchTo(targetPort) {
      target = targetPort
      cut()
    },
    async close() {
      cut()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
