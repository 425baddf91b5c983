/**
 * The load-generator child: autocannon in a process of its own, driven over
 * IPC by bench/load-client.ts, so that the benchmark's own work (polling for
 * ETags, committing, reading metrics) never shares an event loop with it.
 */
import { createLoadRunner, type LoadJob } from './load-runner.js'

export type LoadCommand =
  | { id: number; type: 'tokens'; name: string; tokens: string[]; etags?: string[] }
  | { id: number; type: 'run'; job: LoadJob }
  | { id: number; type: 'stop' }

const runner = createLoadRunner()

process.on('message', (command: LoadCommand) => {
  const reply = (message: object) => process.send?.({ id: command.id, ...message })
  switch (command.type) {
    case 'tokens':
      runner.setTokens(command.name, command.tokens, command.etags)
      reply({ ok: true })
      return
    case 'run':
      runner.runJob(command.job).then(
        (result) => reply({ ok: true, result }),
        (error: unknown) => reply({ ok: false, error: String(error) }),
      )
      return
    case 'stop':
      runner.stop()
      reply({ ok: true })
      return
  }
})
// The parent going away (Ctrl-C, a crash) ends the child too.
process.on('disconnect', () => process.exit(0))
