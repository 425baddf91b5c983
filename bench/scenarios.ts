import type { Scenario } from './scenario.js'
import { apps } from './scenarios/apps.js'
import { languages } from './scenarios/languages.js'
import { memory } from './scenarios/memory.js'
import { newToken } from './scenarios/new-token.js'
import { oneApp } from './scenarios/one-app.js'
import { refresh } from './scenarios/refresh.js'
import { shell200 } from './scenarios/shell-200.js'
import { shell304 } from './scenarios/shell-304.js'
import { snapshot } from './scenarios/snapshot.js'
import { streams } from './scenarios/streams.js'

/**
 * Every scenario, in the order they run; BENCH_ONLY picks some. The order
 * matters twice: memory is read after the scenarios of cached callers and
 * before the floods of new tokens and reloads; streams, with a service and
 * ten thousand sockets of its own, comes last, so it leaves nothing behind
 * for the others.
 */
export const SCENARIOS: readonly Scenario[] = [
  shell200,
  shell304,
  languages,
  apps,
  oneApp,
  memory,
  newToken,
  refresh,
  snapshot,
  streams,
]
