/**
 * Reads a text/event-stream body (the HTML standard's server-sent events)
 * and calls `onEvent` for each event with data; `onChunk` hears every chunk,
 * comments included, which is how a quiet stream shows it is alive. A fetch,
 * since EventSource cannot send Authorization. Resolves when the body ends.
 */
export async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (type: string, data: string, id: string) => void,
  onChunk: () => void,
): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let pending = ''
  let type = ''
  let data: string[] = []
  let id = ''
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    onChunk()
    // A line ends at CRLF, LF or CR; a CR last in the chunk may be half of a CRLF.
    const text = pending + decoder.decode(chunk.value, { stream: true })
    const lines = text.split(/\r\n|\n|\r(?!$)/)
    pending = lines.pop() ?? ''
    for (const line of lines) {
      if (line === '') {
        // An event without a type is a `message`, which the service never sends: '' stands for it.
        if (data.length > 0) onEvent(type, data.join('\n'), id)
        type = ''
        data = []
        continue
      }
      const colon = line.indexOf(':')
      // A line that starts with a colon is a comment (the keep-alive).
      if (colon === 0) continue
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') type = value
      else if (field === 'data') data.push(value)
      else if (field === 'id' && !value.includes('\0')) id = value
    }
  }
}
