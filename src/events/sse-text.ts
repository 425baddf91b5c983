/**
 * Server-sent events (the HTML standard): each event ends with a blank line; a line starting with
 * ":" is a comment that clients ignore and proxies see as traffic.
 */

/** `shell`: the caller's ETag changed; `id` lets a reconnecting client say which tag it holds. */
export function formatShellEvent(tag: string): string {
  return `event: shell\nid: ${tag}\ndata: {"etag":"\\"${tag}\\""}\n\n`
}

/** `gone`: the app was deleted. An event needs a data line to be dispatched at all. */
export function formatGoneEvent(appKey: string): string {
  return `event: gone\ndata: ${JSON.stringify({ app: appKey })}\n\n`
}

export const KEEP_ALIVE_COMMENT = ': keep-alive\n\n'

export const EVENT_STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8'
