import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { findFreePort } from '../../src/embedded/embedded.js'
import { waitFor } from './wait.js'

/**
 * A real Prometheus (Debian's package `prometheus`, which .ci/run installs) of
 * one test's own: a temp config and storage, a free port on loopback, a 1 s
 * scrape and evaluation interval, stopped and removed at teardown.
 */

const PROMETHEUS = 'prometheus'

/** Why the tests that need a Prometheus cannot run here, or false. */
export function prometheusMissing(): string | false {
  const found = spawnSync(PROMETHEUS, ['--version'], { stdio: 'ignore' }).error === undefined
  return found ? false : `${PROMETHEUS} not found: apt-get install prometheus`
}

export interface Sample {
  readonly metric: Record<string, string>
  /** As Prometheus writes it: a decimal, `NaN`, `+Inf` or `-Inf`. */
  readonly value: string
}

export interface RuleState {
  readonly name: string
  readonly type: 'alerting' | 'recording'
  /** Seconds of `for`. */
  readonly duration?: number
  readonly health: 'ok' | 'err' | 'unknown'
  readonly lastError?: string
}

export interface ActiveAlert {
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  readonly state: 'pending' | 'firing'
}

export interface PrometheusServer {
  readonly url: string
  /** An instant query now; throws with Prometheus's own message when the expression is not valid. */
  query(expr: string): Promise<Sample[]>
  /** Values of a label across the series the selector matches (Grafana's label_values). */
  labelValues(label: string, selector: string): Promise<string[]>
  rules(): Promise<RuleState[]>
  alerts(): Promise<ActiveAlert[]>
  /** Writes new rules over the rule file and has Prometheus load them (SIGHUP). */
  replaceRules(rulesYaml: string): Promise<void>
}

interface Teardown {
  teardown(fn: () => unknown): void
}

/** How long Prometheus may take to open its storage and answer /-/ready. */
const READY_TIMEOUT_MS = 20_000
/** After SIGTERM it flushes its head block; a test's few seconds of data take well under this. */
const STOP_TIMEOUT_MS = 10_000

export async function startPrometheus(
  t: Teardown,
  options: { jobName: string; target: string; rulesYaml: string },
): Promise<PrometheusServer> {
  const home = await mkdtemp(join(tmpdir(), 'shell-data-test-prometheus-'))
  // One teardown, so that the storage is removed only once Prometheus has stopped writing it.
  let stopPrometheus = async () => {}
  t.teardown(async () => {
    await stopPrometheus()
    await rm(home, { recursive: true, force: true })
  })
  const rulesPath = join(home, 'rules.yaml')
  const configPath = join(home, 'prometheus.yaml')
  await writeFile(rulesPath, options.rulesYaml)
  await writeFile(
    configPath,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [rulesPath],
      scrape_configs: [
        { job_name: options.jobName, static_configs: [{ targets: [options.target] }] },
      ],
    }),
  )
  const port = await findFreePort()
  const url = `http://127.0.0.1:${port}`
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${join(home, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let log = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    log = (log + chunk).slice(-4000)
  })
  let ended = false
  const exited = new Promise<void>((resolve) => {
    const end = () => {
      ended = true
      resolve()
    }
    child.once('exit', end)
    child.once('error', (error) => {
      log += `${error.message}\n`
      end()
    })
  })
  stopPrometheus = async () => {
    if (ended) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
    await exited
    clearTimeout(timer)
  }
  await waitForReady(
    url,
    () => ended,
    () => log,
  )

  const api = async <T>(path: string, body?: URLSearchParams): Promise<T> => {
    const response = await fetch(
      `${url}${path}`,
      body === undefined ? {} : { method: 'POST', body },
    )
    const answer = (await response.json()) as { status: string; data: T; error?: string }
    if (answer.status !== 'success') throw new Error(`Prometheus ${path}: ${answer.error}`)
    return answer.data
  }

  return {
    url,
    async query(expr) {
      const data = await api<{ resultType: string; result: unknown }>(
        '/api/v1/query',
        new URLSearchParams({ query: expr }),
      )
      if (data.resultType !== 'vector') throw new Error(`${data.resultType}, not a vector: ${expr}`)
      return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map(
        (sample) => ({ metric: sample.metric, value: sample.value[1] }),
      )
    },
    labelValues(label, selector) {
      const query = new URLSearchParams({ 'match[]': selector })
      return api<string[]>(`/api/v1/label/${encodeURIComponent(label)}/values?${query}`)
    },
    async rules() {
      const data = await api<{ groups: { rules: RuleState[] }[] }>('/api/v1/rules')
      return data.groups.flatMap((group) => group.rules)
    },
    async alerts() {
      return (await api<{ alerts: ActiveAlert[] }>('/api/v1/alerts')).alerts
    },
    async replaceRules(rulesYaml) {
      await writeFile(rulesPath, rulesYaml)
      child.kill('SIGHUP')
    },
  }
}

async function waitForReady(
  url: string,
  hasEnded: () => boolean,
  log: () => string,
): Promise<void> {
  await waitFor(
    async () => {
      if (hasEnded()) throw new Error(`prometheus exited at start: ${log()}`)
      return fetch(`${url}/-/ready`).then(
        (response) => response.ok,
        () => false,
      )
    },
    () => `prometheus to be ready: ${log()}`,
    READY_TIMEOUT_MS,
  )
}
