import type { IncomingMessage, ServerResponse } from 'node:http'

export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8'

/** Headers as a reply holds them before the head is written. */
export type ReplyHeaders = Record<string, string | number | string[] | undefined>

/**
 * The HTTP side of an event stream: readies a response to stay open for
 * hours and writes its head. `headers` are those already set on the reply
 * (CORS, Vary); the stream's own are added.
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
  // Nothing reads the request again, and its headers (a KiB-long token among them) would
  // otherwise be held for the stream's whole life.
  releaseRequestHeaders(response.req)
  response.writeHead(200, {
    ...headers,
    'content-type': EVENT_STREAM_CONTENT_TYPE,
    'cache-control': 'no-cache',
    'content-language': contentLanguage,
    // nginx and its kin buffer responses unless told not to; an event must not wait.
    'x-accel-buffering': 'no',
  })
  keepHeadFlat(response)
}

function releaseRequestHeaders(request: IncomingMessage | undefined): void {
  if (request === undefined) return
  request.headers = {}
  request.rawHeaders.length = 0
}

/**
 * Node keeps the head of a response for its whole life (it tells it whether
 * headers were sent), as a string built by one concatenation per header
 * line: some thirty string pieces. A flat copy holds the same text in one
 * string (0.6 KB less heap per open stream); Node sends it with the first
 * write, and reads it afterwards only for its truth.
 */
function keepHeadFlat(response: ServerResponse): void {
  const written = response as ServerResponse & { _header?: unknown }
  if (typeof written._header === 'string' && written._header !== '') {
    written._header = Buffer.from(written._header, 'latin1').toString('latin1')
  }
}
