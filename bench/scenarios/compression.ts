import type { BenchEnvironment } from '../environment.js'
import { createHttpProbe } from '../http-probe.js'
import { passOrMiss, type Scenario } from '../scenario.js'

/** What Chromium sends. */
const BROWSER = { 'accept-encoding': 'gzip, deflate, br, zstd' }
/** A shell body compresses to well under half: the menus repeat their keys and paths. */
const MAX_SHELL_BYTES = 0.4
/** The inventory repeats itself even more. */
const MAX_INVENTORY_BYTES = 0.12
/** Codings are made once per body, so a warm caller pays a look-up, not a compression. */
const MIN_WARM_RATIO = 0.95
/**
 * A refreshed token's caller has been sent this body before: it is found
 * joined and compressed, so a new token costs what it costs without codings.
 */
const MIN_NEW_TOKEN_RATIO = 0.85
/** Callers whose bodies are weighed. */
const WEIGHED = 100

/**
 * Bytes on the wire with a browser's Accept-Encoding against none: the seed
 * app's shell for its warm callers, and the inventory of the large data set;
 * then the seed app's throughput with and without, warm and on new tokens.
 */
export const compression: Scenario = {
  id: 'compression',
  run: async ({ env, compare }) => {
    const path = `/api/v1/shell/${env.hotApp}`
    const shell = await weigh(env.small.url, path, env.warmTokens.slice(0, WEIGHED))
    const inventory = await weigh(env.large.url, '/api/v1/apps', env.warmTokens.slice(0, 1))
    const warm = await compare(
      {
        label: 'shell 200, browser Accept-Encoding (br)',
        server: env.small,
        path,
        tokens: env.warmPool,
        headers: BROWSER,
      },
      { label: 'shell 200, no Accept-Encoding', server: env.small, path, tokens: env.warmPool },
      MIN_WARM_RATIO,
    )
    const fresh = await compare(
      {
        label: 'shell 200, new token, browser Accept-Encoding',
        server: env.small,
        path,
        tokens: await env.newTokenPool(),
        headers: BROWSER,
      },
      {
        label: 'shell 200, new token, no Accept-Encoding',
        server: env.small,
        path,
        tokens: await env.newTokenPool(),
      },
      MIN_NEW_TOKEN_RATIO,
    )
    // Shown, no target: a body no one has been sent is compressed on its first request.
    const stranger = await compare(
      {
        label: 'shell 200, a new user every request, browser Accept-Encoding',
        server: env.small,
        path,
        tokens: await env.newUserPool(),
        headers: BROWSER,
      },
      {
        label: 'shell 200, a new user every request, no Accept-Encoding',
        server: env.small,
        path,
        tokens: await env.newUserPool(),
      },
      null,
    )
    return {
      rows: [
        {
          scenario: `bytes per shell 200, ${env.hotApp}, browser Accept-Encoding / none`,
          value: `${shell.ratio.toFixed(3)} (${shell.coded} / ${shell.identity} B)`,
          target: `<= ${MAX_SHELL_BYTES}`,
          result: passOrMiss(shell.ratio <= MAX_SHELL_BYTES && shell.coding === 'br'),
        },
        {
          scenario: `bytes per inventory 200, ${env.dataset.apps + 1} apps, the same`,
          value: `${inventory.ratio.toFixed(3)} (${inventory.coded} / ${inventory.identity} B)`,
          target: `<= ${MAX_INVENTORY_BYTES}`,
          result: passOrMiss(inventory.ratio <= MAX_INVENTORY_BYTES && inventory.coding === 'br'),
        },
        ...warm.rows,
        ...fresh.rows,
        ...stranger.rows,
      ],
      notes: [
        `bytes: the mean over ${WEIGHED} warm callers' bodies (they differ by their user block and roles), sent as ${shell.coding}; the inventory as ${inventory.coding}`,
        `warm: ${warm.notes.join('; ')}`,
        `new tokens (the same users' next tokens): ${fresh.notes.join('; ')}`,
        `new users (bodies compressed on their first request): ${stranger.notes.join('; ')}`,
      ],
    }
  },
}

/** The bytes of each caller's body with a browser's Accept-Encoding and without. */
async function weigh(
  url: BenchEnvironment['small']['url'],
  path: string,
  tokens: readonly string[],
) {
  const probe = createHttpProbe(url)
  let identity = 0
  let coded = 0
  let coding = ''
  try {
    for (const token of tokens) {
      const authorization = `Bearer ${token}`
      identity += (await probe.get(path, { authorization })).body.length
      const response = await probe.get(path, { authorization, ...BROWSER })
      coded += response.body.length
      coding = response.headers['content-encoding'] ?? 'identity'
    }
  } finally {
    probe.close()
  }
  return {
    identity: identity / tokens.length,
    coded: coded / tokens.length,
    ratio: coded / identity,
    coding,
  }
}
