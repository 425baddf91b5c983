/**
 * A front end's use of the package's two entry points, by name, as a
 * bundling TypeScript project writes it: `npm run typecheck` compiles it
 * (test/client/tsconfig.consumer.json), so a declaration that goes missing
 * or changes shape fails the suite. Never run.
 */
import {
  clearStoredShells,
  createShellClient,
  type GetToken,
  type Shell,
  type ShellClient,
  type ShellClientError,
  type ShellMenuItem,
  type ShellState,
  type ShellStorage,
} from 'shell-data-service/client'
import type { ShellActionDetail, ShellFrame } from 'shell-data-service/frame'

const getToken: GetToken = async ({ renew }) => (renew ? 'a-fresh-token' : 'a-cached-token')
const storage: ShellStorage = localStorage

const client: ShellClient = createShellClient({
  appKey: 'crm',
  getToken,
  sub: 'u-123',
  baseUrl: 'https://shell.example.internal',
  locales: navigator.languages,
  storage,
  live: true,
  timeoutMs: 5_000,
})

function drawSidebar(items: readonly ShellMenuItem[]): string[] {
  return items.flatMap((item) => [item.label, ...drawSidebar(item.children)])
}

const unsubscribe: () => void = client.subscribe((state: ShellState) => {
  const shell: Shell | null = state.shell
  const source: 'storage' | 'network' | null = state.source
  const status: number | undefined = state.error?.status
  if (shell !== null) drawSidebar(shell.menus.sidebar)
  console.log(source, status, state.etag, state.live, state.stale, shell?.user.roles.join(', '))
})

client.ready.then(
  (state) => console.log(state.shell?.branding.productName),
  (error: ShellClientError) => console.log(error.status, error.message),
)
client.refresh()
unsubscribe()
client.close()
// Sign-out: every kept shell, whoever's, of localStorage and of another Storage.
clearStoredShells()
clearStoredShells(sessionStorage)
const inMemory = new Map<string, string>()
createShellClient({
  appKey: 'crm',
  getToken,
  storage: {
    getItem: (key) => inMemory.get(key) ?? null,
    setItem: (key, value) => void inMemory.set(key, value),
    removeItem: (key) => void inMemory.delete(key),
  },
})

const frame = document.querySelector('shell-frame')
if (frame !== null) {
  const typed: ShellFrame = frame
  typed.getToken = getToken
  typed.addEventListener('shell-action', (event) => {
    const detail: ShellActionDetail = event.detail
    if (detail.id === 'logout') event.preventDefault()
  })
  typed.addEventListener('shell-state', (event) => console.log(event.detail.live))
  console.log(typed.state?.shell?.app.name)
}
const made = document.createElement('shell-frame')
made.setAttribute('app', 'crm')
made.refresh()
