import type { ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Socket } from 'node:net'

/** What an open stream writes to: its bare socket once taken, else its response. */
export interface StreamOutput {
  write(text: string): void
  /** Bytes accepted but not yet handed to the kernel. */
  readonly writableLength: number
  /** What is queued goes out, then the connection closes. */
  end(): void
  /** At once, whatever is queued. */
  destroy(): void
  /** The connection closed, whoever closed it. */
  onClose(listener: () => void): void
}

/** Node's own helper that returns a connection's parser to the pool (`_http_common`). */
type FreeParser = (parser: unknown, request: unknown, socket: unknown) => void

const { freeParser } = createRequire(import.meta.url)('_http_common') as {
  freeParser?: FreeParser
}

/**
 * The listeners Node's HTTP server puts on each connection's socket, by the
 * names they have in `lib/_http_server.js` (Node 20 and 22): what the
 * server does for an `Upgrade` request, where it hands the socket over, is
 * done here for a stream whose head is written.
 */
const SERVER_LISTENERS: readonly (readonly [event: string, name: string])[] = [
  ['data', 'bound socketOnData'],
  ['end', 'bound socketOnEnd'],
  ['close', 'bound socketOnClose'],
  ['drain', 'bound socketOnDrain'],
  ['error', 'socketOnError'],
  ['timeout', 'socketOnTimeout'],
  ['pause', 'onSocketPause'],
  ['resume', 'onSocketResume'],
]

interface ServerSocket extends Socket {
  parser?: unknown
  _httpMessage?: unknown
}

/**
 * Takes an event stream's socket from Node's HTTP server once the response
 * head is on it, as the server itself does for an `Upgrade`: the server's
 * listeners come off, its parser goes back to the pool, and the request and
 * response objects are left to the collector. What stays per stream is the
 * socket. Node keeps about 4 KB of objects per connection for HTTP (parser,
 * request, response, the server's bound listeners, fastify's request and
 * reply); a stream needs none of them after its head, and ten thousand
 * streams held them for hours.
 *
 * The body is already close-delimited (no chunk framing; stream-response.ts),
 * so events go onto the socket as they are. Call it once the parser is done
 * with the request (a tick after the handler, never inside the parser's
 * callbacks: a parser freed there is put back into the server's list of
 * connections when its message completes). Returns undefined, and leaves
 * everything as it was, when the response is not in the state this relies
 * on (its head not yet on its own socket, bytes still queued in the
 * response) or Node's listeners are not the ones named above: the stream
 * then keeps writing through the response, as it did before.
 */
export function takeStreamSocket(response: ServerResponse): StreamOutput | undefined {
  const socket = response.socket as ServerSocket | null
  if (
    freeParser === undefined ||
    socket === null ||
    socket.parser == null ||
    socket._httpMessage !== response ||
    !response.headersSent ||
    queuedInResponse(response) !== 0 ||
    socket.destroyed
  ) {
    return undefined
  }
  const serverListeners: [string, (...args: unknown[]) => void][] = []
  for (const [event, name] of SERVER_LISTENERS) {
    const listener = socket.listeners(event).find((candidate) => candidate.name === name)
    if (listener === undefined) return undefined
    serverListeners.push([event, listener as (...args: unknown[]) => void])
  }
  // Ours first, so that no reset between the two steps goes unheard.
  socket.on('error', ignoreSocketError)
  for (const [event, listener] of serverListeners) socket.removeListener(event, listener)
  response.detachSocket(socket)
  freeParser(socket.parser, response.req, socket)
  // Read and drop whatever the client sends: reading is how its leaving (EOF, a reset) is seen at once.
  socket.on('data', dropData)
  // The server's sockets stay half-open on the client's EOF (the server finishes its responses
  // first); a stream has nothing to finish.
  socket.on('end', () => socket.destroy())
  socket.resume()
  return {
    write: (text) => void socket.write(text),
    get writableLength() {
      return socket.writableLength
    },
    // Closed once the last bytes are out, not left half-open for a client that never closes.
    end: () => void socket.end(() => socket.destroy()),
    destroy: () => void socket.destroy(),
    onClose: (listener) => void socket.on('close', listener),
  }
}

/** The stream through its response: a close-delimited body, whose end closes the connection. */
export function responseOutput(response: ServerResponse): StreamOutput {
  return {
    write: (text) => void response.write(text),
    get writableLength() {
      return response.writableLength
    },
    end: () => void response.end(),
    destroy: () => void response.destroy(),
    onClose: (listener) => void response.on('close', listener),
  }
}

function queuedInResponse(response: ServerResponse): number {
  const queued = (response as ServerResponse & { outputData?: unknown[] }).outputData
  return Array.isArray(queued) ? queued.length : 0
}

function ignoreSocketError(): void {
  // A reset or a write after the client left ends the stream through 'close'.
}

function dropData(): void {
  // An event stream's client has nothing more to say.
}
