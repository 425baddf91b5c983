/**
 * The part of autocannon's API the benchmark uses; the package ships no
 * types and @types/autocannon is not a dependency.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  interface RequestData {
    method?: string
    path?: string
    headers?: Record<string, string>
  }

  interface Request extends RequestData {
    setupRequest?: (request: RequestData & { headers: Record<string, string> }) => RequestData
  }

  interface Options {
    url: string
    connections?: number
    pipelining?: number
    /** Seconds. */
    duration?: number
    /** Requests per second over all connections. */
    overallRate?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    requests?: Request[]
  }

  interface Result {
    errors: number
    timeouts: number
    non2xx: number
    resets: number
    duration: number
  }

  interface Instance extends EventEmitter {
    stop(): void
    on(
      event: 'response',
      listener: (
        client: unknown,
        statusCode: number,
        bytes: number,
        responseTimeMs: number,
      ) => void,
    ): this
    on(event: 'done', listener: (result: Result) => void): this
    on(event: string, listener: (...args: unknown[]) => void): this
  }

  function autocannon(
    options: Options,
    callback: (error: Error | null, result: Result) => void,
  ): Instance

  export default autocannon
  export type { Instance, Options, Request, RequestData, Result }
}
