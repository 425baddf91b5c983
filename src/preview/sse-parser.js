/**
 * A streaming parser of text/event-stream, as the HTML standard's
 * server-sent events define it, for a stream read with fetch (EventSource
 * cannot send Authorization). Feed it decoded text in chunks of any size; it
 * calls `onEvent({ event, data, id })` for each dispatched event, `id` being
 * the last event ID so far. Comments and `retry` are ignored.
 */
export function createSseParser(onEvent) {
  let pending = ''
  let eventType = ''
  let data = []
  let lastEventId = ''

  function readLine(line) {
    if (line === '') {
      if (data.length > 0)
        onEvent({ event: eventType || 'message', data: data.join('\n'), id: lastEventId })
      eventType = ''
      data = []
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') eventType = value
    else if (field === 'data') data.push(value)
    else if (field === 'id' && !value.includes('\0')) lastEventId = value
  }

  return function feed(chunk) {
    // A line ends at CRLF, LF or CR; a CR at the very end may be the first half of a CRLF.
    const lines = (pending + chunk).split(/\r\n|\n|\r(?!$)/)
    pending = lines.pop() ?? ''
    for (const line of lines) readLine(line)
  }
}
