import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { hostInUrl } from '../config/host-address.js'

/** Listens and returns `http://host:port`, the port as bound (0: one the system chose). */
export async function listenAt(
  app: FastifyInstance,
  options: { readonly host: string; readonly port: number; readonly backlog?: number },
): Promise<string> {
  await app.listen(options)
  const { port } = app.server.address() as AddressInfo
  return `http://${hostInUrl(options.host)}:${port}`
}
