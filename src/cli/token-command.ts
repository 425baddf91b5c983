import { parseArgs } from 'node:util'
import {
  loadLocalIssuer,
  localIssuerUrl,
  parseTtl,
  readRecordedLocalIssuer,
} from '../auth/local-issuer.js'
import { LOCAL_DATA_DIR } from '../embedded/locate-database.js'
import { type CommandContext, fail } from './command-context.js'

/**
 * Local mode only: prints a token the local issuer signed for this clone's local service: the one
 * at HOST and PORT when either is set, else the one that started last (recorded under `.data/`).
 */
export async function runToken(args: string[], context: CommandContext): Promise<number> {
  if (context.config.oidc !== null) {
    return fail(
      'token',
      'local mode only; with OIDC_ISSUER set, get tokens from your identity provider',
    )
  }
  let values: Partial<Record<'sub' | 'roles' | 'ttl' | 'username' | 'name' | 'email', string>>
  try {
    ;({ values } = parseArgs({
      args,
      options: {
        sub: { type: 'string' },
        roles: { type: 'string' },
        ttl: { type: 'string' },
        username: { type: 'string' },
        name: { type: 'string' },
        email: { type: 'string' },
      },
    }))
  } catch (error) {
    return fail('token', (error as Error).message)
  }
  const ttlSeconds = parseTtl(values.ttl ?? '1h')
  if (ttlSeconds === null) {
    return fail('token', `--ttl "${values.ttl}" is not a duration like 90s, 30m, 1h or 2d`)
  }
  const roles = [...new Set((values.roles ?? '').split(',').map((role) => role.trim()))].filter(
    (role) => role !== '',
  )
  // Set, they name the service; unset, the defaults would name 8080 whatever the service uses.
  const addressGiven = ['PORT', 'HOST'].some((name) => process.env[name]?.trim())
  const recorded = addressGiven ? null : await readRecordedLocalIssuer(LOCAL_DATA_DIR)
  const issuer = await loadLocalIssuer({
    dataDir: LOCAL_DATA_DIR,
    issuer: recorded ?? localIssuerUrl(context.config.host, context.config.port),
  })
  const token = await issuer.signToken({
    sub: values.sub ?? 'local-user',
    roles,
    ttlSeconds,
    username: values.username,
    name: values.name,
    email: values.email,
  })
  process.stdout.write(`${token}\n`)
  return 0
}
