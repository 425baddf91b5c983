import { setTimeout as sleep } from 'node:timers/promises'
import { warmCallers } from '../environment.js'
import { readMetrics, sample } from '../read-metrics.js'
import { passOrMiss, type Scenario } from '../scenario.js'

/**
 * How much longer than the rest of the run the instance serves after
 * SIGTERM: wrk has stopped and printed before the drain begins, as a load
 * balancer has stopped sending by then.
 */
const DELAY_SLACK_S = 2
/** The contract: after its delay, a shutdown ends within this. */
const DRAIN_BOUND_MS = 10_000
/** The shell's answers, counted by the service itself. */
const SHELL_200 = 'route="/api/v1/shell/:appKey",method="GET",status_code="200"'

/**
 * Every deploy, as a replica sees it: the load generator's keep-alive load
 * on a service of its own (the large data set), which gets SIGTERM halfway
 * through the run with SHUTDOWN_DELAY_S longer than the rest of it. Every
 * request of the run must be answered: wrk's errors by kind (connect,
 * read, write, timeout, status of 400 or more) are counted, the target is
 * none. Then the instance must drain and exit 0 within its delay plus 10 s.
 */
export const deploy: Scenario = {
  id: 'deploy',
  run: async ({ env, settings, load, log }) => {
    // A second of load before the signal at least, and as much after it.
    const durationS = Math.max(settings.durationS, 2)
    const signalAfterMs = (durationS * 1000) / 2
    const delayS = Math.ceil(durationS / 2) + DELAY_SLACK_S
    const instance = await env.startService('service-deploy', env.largeDatabaseUrl, {
      SHUTDOWN_DELAY_S: String(delayS),
    })
    try {
      const path = `/api/v1/shell/${env.hotApp}`
      await warmCallers(instance.url, path, env.warmTokens)
      const run = load.run({ url: `${instance.url}${path}`, tokens: env.warmPool }, durationS)
      await sleep(signalAfterMs)
      const servedBefore = sample(
        await readMetrics(instance.url),
        'shell_http_request_duration_seconds_count',
        SHELL_200,
      )
      const signalledAtMs = performance.now()
      process.kill(instance.pid, 'SIGTERM')
      const exited = instance.exited.then((exit) => ({
        ...exit,
        afterMs: performance.now() - signalledAtMs,
      }))
      // Refused, when the listener closed at once (what this scenario is there to catch).
      const readyz = await fetch(`${instance.url}/readyz`).then(
        (response) => String(response.status),
        () => 'refused',
      )
      const result = await run
      const loadEndedAfterMs = performance.now() - signalledAtMs
      // Still within the delay: the instance answers /metrics as before.
      const servedAfter = await readMetrics(instance.url).then(
        (metrics) => sample(metrics, 'shell_http_request_duration_seconds_count', SHELL_200),
        () => Number.NaN,
      )
      const exit = await exited
      const exitedAfterMs = exit.afterMs
      log(
        `deploy: load ended ${loadEndedAfterMs.toFixed(0)} ms after SIGTERM, exit ${exit.code} after ${exitedAfterMs.toFixed(0)} ms`,
      )
      const kinds = Object.entries(result.errorsByKind)
        .map(([kind, count]) => `${kind} ${count}`)
        .join(', ')
      const boundMs = delayS * 1000 + DRAIN_BOUND_MS
      const drainMs = exitedAfterMs - delayS * 1000
      return {
        rows: [
          {
            scenario: `deploy: ${durationS} s of keep-alive load, SIGTERM after ${signalAfterMs / 1000} s, SHUTDOWN_DELAY_S=${delayS}, errors`,
            requestsPerSecond: result.requestsPerSecond,
            p50Ms: result.p50Ms,
            p99Ms: result.p99Ms,
            value: `${result.errors} (${kinds})`,
            target: '0',
            result: passOrMiss(result.errors === 0),
          },
          {
            scenario: '  /readyz right after SIGTERM',
            value: readyz,
            target: '503',
            result: passOrMiss(readyz === '503'),
          },
          {
            scenario: '  SIGTERM to exit: the delay, then the drain',
            value: `${(exitedAfterMs / 1000).toFixed(2)} s, drain ${drainMs.toFixed(0)} ms, exit code ${exit.code}`,
            target: `<= ${boundMs / 1000} s, code 0`,
            result: passOrMiss(exit.code === 0 && exitedAfterMs <= boundMs),
          },
        ],
        notes: [
          `${result.requests} requests in the run, ${servedAfter - servedBefore} shell 200s served after SIGTERM (the service's own count, read during the delay); /readyz answered ${readyz} right after the signal; the load ended ${(loadEndedAfterMs / 1000).toFixed(2)} s after it, the drain began ${delayS} s after it`,
        ],
      }
    } finally {
      await instance.stop()
    }
  },
}
