/**
 * SIGTERM while the process starts (here: while its embedded PostgreSQL cluster is being made,
 * before the service listens) is not Node's default, which would end the process where it stands
 * and leave the embedded server to itself: the start stops what it started and exits with 0.
 */
import { connect } from 'node:net'
import t from 'tap'
import { findFreePort } from '../../src/embedded/embedded.js'
import { copyClone } from '../helpers/clone-copy.js'
import { spawnService } from '../helpers/service-process.js'

/** Whether anything accepts connections on the port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

t.test('SIGTERM during the start: the embedded server stopped, exit 0', async (t) => {
  const clone = await copyClone(t)
  const service = spawnService(t, { PORT: String(await findFreePort()) }, clone.root)
  await service.waitForLine(
    (line) => line.msg === 'creating the embedded PostgreSQL cluster',
    'the cluster being made',
    90_000,
  )
  service.child.kill('SIGTERM')
  const exit = await service.exited
  t.same(exit, { code: 0, signal: null }, `exit 0, not the signal's default: ${service.stderr()}`)
  const started = await service.waitForLine(
    (line) => line.msg === 'embedded PostgreSQL started',
    'the server it had started',
  )
  t.ok(
    service.lines.some((line) => line.includes('embedded PostgreSQL stopped')),
    'stopped by the start',
  )
  t.ok(
    service.lines.some((line) => line.includes('stopped during the start')),
    'said so',
  )
  t.notOk(
    service.lines.some((line) => line.includes('listening on')),
    'it never listened',
  )
  t.equal(await accepts(Number(started.port)), false, 'nothing listens on its port any more')
})
