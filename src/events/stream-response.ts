import type { ServerResponse } from 'node:http'

export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8'

/** Headers as a reply holds them before the head is written. */
export type ReplyHeaders = Record<string, string | number | string[] | undefined>

/**
 * The HTTP side of an event stream: readies a response to stay open for
 * hours and writes its head. `headers` are those already set on the reply
 * (CORS, Vary); the stream's own are added. Once the head is out, the
 * stream takes the socket and leaves the response (stream-socket.ts).
 */
export function writeStreamHead(
  response: ServerResponse,
  headers: ReplyHeaders,
  contentLanguage: string,
): void {
  // A reset or a write after the client left surfaces here, never as an unhandled error.
  response.on('error', () => undefined)
  // The stream outlives any idle timeout a socket may carry.
  response.socket?.setTimeout(0)
  // The body runs until the connection closes, as a stream's does anyway: no chunk framing
  // around every event, which halves the work of a write when ten thousand streams get one.
  response.useChunkedEncodingByDefault = false
  response.writeHead(200, {
    ...headers,
    'content-type': EVENT_STREAM_CONTENT_TYPE,
    'cache-control': 'no-cache',
    'content-language': contentLanguage,
    // nginx and its kin buffer responses unless told not to; an event must not wait.
    'x-accel-buffering': 'no',
  })
}
