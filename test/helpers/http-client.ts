import { type IncomingHttpHeaders, request } from 'node:http'
import { connect } from 'node:net'

/** A response read whole, with the exact headers the server sent. */
export interface HttpResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly text: string
  json<T = Record<string, unknown>>(): T
}

export interface RequestOptions {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

/**
 * One request over node:http on a connection of its own (no agent), so that
 * HEAD and 304 responses are seen as sent: no body, every header as is.
 */
export function httpRequest(
  baseUrl: string,
  path: string,
  options: RequestOptions = {},
): Promise<HttpResponse> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: hostname,
        port,
        path,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        agent: false,
      },
      (incoming) => {
        const chunks: Buffer[] = []
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
        incoming.on('error', reject)
        incoming.on('end', () =>
          resolve(toResponse(incoming.statusCode ?? 0, incoming.headers, Buffer.concat(chunks))),
        )
      },
    )
    outgoing.setTimeout(15_000, () => outgoing.destroy(new Error(`no answer to ${path}`)))
    outgoing.on('error', reject)
    outgoing.end(options.body)
  })
}

/** `Authorization: Bearer <token>` plus any other headers. */
export function bearer(token: string, headers: Record<string, string> = {}): RequestOptions {
  return { headers: { authorization: `Bearer ${token}`, ...headers } }
}

/**
 * Writes the bytes as they are (node:http refuses odd paths and header bytes)
 * on a fresh socket and reads until the server closes it; the request should
 * carry `Connection: close`. Everything after the header block is the body,
 * so a HEAD or 304 that leaks bytes shows up here.
 */
export function rawRequest(baseUrl: string, bytes: string | Buffer): Promise<HttpResponse> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer to a raw request')))
    let failure: Error | undefined
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    // A server that refuses a request while it is still being sent may reset the connection
    // right after its answer: the answer counts when it arrived whole.
    socket.on('error', (error) => {
      failure = error
    })
    socket.on('close', () => {
      try {
        resolve(parseRawResponse(Buffer.concat(chunks)))
      } catch (error) {
        reject(failure ?? error)
      }
    })
    socket.write(bytes)
  })
}

/** Parses one HTTP/1.1 response; a chunked body is decoded, any other is taken as is. */
export function parseRawResponse(raw: Buffer): HttpResponse {
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(`incomplete response: ${JSON.stringify(raw.toString('latin1'))}`)
  const [statusLine = '', ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0)
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  }
  let body = raw.subarray(end + 4)
  if (headers['transfer-encoding'] === 'chunked') body = decodeChunked(body)
  return toResponse(status, headers, body)
}

function decodeChunked(encoded: Buffer): Buffer {
  const parts: Buffer[] = []
  let offset = 0
  for (;;) {
    const lineEnd = encoded.indexOf('\r\n', offset)
    if (lineEnd < 0) break
    const size = Number.parseInt(encoded.subarray(offset, lineEnd).toString('latin1'), 16)
    if (!(size > 0)) break
    parts.push(encoded.subarray(lineEnd + 2, lineEnd + 2 + size))
    offset = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}

function toResponse(status: number, headers: IncomingHttpHeaders, body: Buffer): HttpResponse {
  const text = body.toString('utf8')
  return {
    status,
    headers,
    body,
    text,
    json: <T>() => JSON.parse(text) as T,
  }
}

/** A keep-alive connection written by hand, to hold a request half-sent across a shutdown. */
export interface RawConnection {
  write(bytes: string): void
  /** The next response on the connection (bodies with Content-Length only). */
  nextResponse(): Promise<HttpResponse>
  /** Resolves when the server has closed the connection. */
  readonly closed: Promise<void>
  destroy(): void
}

export async function openConnection(baseUrl: string): Promise<RawConnection> {
  const { hostname, port } = new URL(baseUrl)
  const socket = connect(Number(port), hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve).once('error', reject)
  })
  let buffer = Buffer.alloc(0)
  let ended = false
  let wake: (() => void) | undefined
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk])
    wake?.()
  })
  const closed = new Promise<void>((resolve) => {
    socket.on('close', () => {
      ended = true
      wake?.()
      resolve()
    })
  })
  socket.on('error', () => {})

  /** A whole response at the start of the buffer, taken out of it, or undefined. */
  function takeResponse(): HttpResponse | undefined {
    const end = buffer.indexOf('\r\n\r\n')
    if (end < 0) return undefined
    const length = Number(
      /\r\ncontent-length: *(\d+)/i.exec(buffer.subarray(0, end).toString('latin1'))?.[1] ?? 0,
    )
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(buffer.toString('latin1', 0, 12))?.[1] ?? 0)
    const bodyLength = status === 304 ? 0 : length
    if (buffer.length < end + 4 + bodyLength) return undefined
    const response = parseRawResponse(buffer.subarray(0, end + 4 + bodyLength))
    buffer = buffer.subarray(end + 4 + bodyLength)
    return response
  }

  return {
    write: (bytes) => socket.write(bytes),
    async nextResponse() {
      for (;;) {
        const response = takeResponse()
        if (response !== undefined) return response
        if (ended) throw new Error('the connection closed before a whole response')
        await new Promise<void>((resolve) => {
          wake = resolve
        })
      }
    },
    closed,
    destroy: () => socket.destroy(),
  }
}
