/**
 * The embedded server's own failures, below the service: each is an
 * EmbeddedPostgresError of one line that says what failed and what to do.
 */
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { EmbeddedPostgresError } from '../../src/embedded/embedded.js'
import { resolvePostgresRuntime } from '../../src/embedded/postgres-runtime.js'
import {
  initialiseCluster,
  PortTakenError,
  startPostgresServer,
} from '../../src/embedded/postgres-server.js'

const logger = pino({ level: 'silent' })

t.test('a port another program holds: PortTakenError, naming the port', async (t) => {
  const runtime = await resolvePostgresRuntime(logger)
  const home = await mkdtemp(join(tmpdir(), 'shell-data-port-test-'))
  t.teardown(() => rm(home, { recursive: true, force: true }))
  if (runtime.user !== null) await chown(home, runtime.user.uid, runtime.user.gid)
  const dataDir = join(home, 'pg')
  await initialiseCluster({ runtime, dataDir, logger, password: 'test' })
  // The suite's own server holds this port.
  const takenPort = Number(new URL(process.env.SHELL_TEST_ADMIN_URL ?? '').port)
  const error = await startPostgresServer({ runtime, dataDir, port: takenPort, logger }).then(
    () => null,
    (failure: unknown) => failure,
  )
  t.ok(error instanceof PortTakenError, String(error))
  t.ok(error instanceof EmbeddedPostgresError)
  t.match((error as Error).message, new RegExp(`^[^\\n]*127\\.0\\.0\\.1:${takenPort}[^\\n]*$`))
})

t.test('initdb on a folder it cannot use: one line naming the folder', async (t) => {
  const runtime = await resolvePostgresRuntime(logger)
  const home = await mkdtemp(join(tmpdir(), 'shell-data-initdb-test-'))
  t.teardown(() => rm(home, { recursive: true, force: true }))
  if (runtime.user !== null) await chown(home, runtime.user.uid, runtime.user.gid)
  // Not empty: initdb refuses to write a cluster over other files.
  await writeFile(join(home, 'something-else'), 'not a cluster\n')
  await t.rejects(initialiseCluster({ runtime, dataDir: home, logger, password: 'test' }), {
    name: 'EmbeddedPostgresError',
    message: new RegExp(
      `^initdb could not create the embedded PostgreSQL cluster in ${home}: [^\\n]+$`,
    ),
  })
})
