import type { Scenario } from './scenario.js'
import { audiences } from './scenarios/audiences.js'
import { compression } from './scenarios/compression.js'
import { deploy } from './scenarios/deploy.js'
import { failover } from './scenarios/failover.js'
import { memory } from './scenarios/memory.js'
import { newToken } from './scenarios/new-token.js'
import { outage } from './scenarios/outage.js'
import { overload } from './scenarios/overload.js'
import { pageLoad } from './scenarios/page-load.js'
import { refresh } from './scenarios/refresh.js'
import { scale } from './scenarios/scale.js'
import { shell } from './scenarios/shell.js'
import { snapshot } from './scenarios/snapshot.js'
import { standby } from './scenarios/standby.js'
import { streams } from './scenarios/streams.js'

/**
 * Every scenario, in the order they run; BENCH_ONLY picks some. The order
 * matters: memory is read after the scenarios of cached callers and before
 * the floods of new tokens and reloads; scale terminates the large
 * database's backends and bumps its revisions, which the others reload;
 * page-load, streams, deploy, outage, standby, failover and overload, with
 * services (and for page-load, outage, standby, failover and overload
 * databases) of their own,
 * come last, so they leave nothing behind for the others.
 */
export const SCENARIOS: readonly Scenario[] = [
  shell,
  audiences,
  compression,
  memory,
  newToken,
  refresh,
  snapshot,
  scale,
  pageLoad,
  streams,
  deploy,
  outage,
  standby,
  failover,
  overload,
]
