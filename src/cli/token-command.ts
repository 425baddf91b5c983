import type { CommandContext } from './main.js'

export async function runToken(_args: string[], _context: CommandContext): Promise<number> {
  process.stderr.write('shell-data token: not available yet\n')
  return 1
}
