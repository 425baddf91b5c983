/**
 * The React example of docs/client.md ("In a React component"), as it is
 * printed there (test/client/readme-example.test.ts
 * compares them): compiled by `npm run typecheck` against the package's
 * declarations and React's (test/client/tsconfig.consumer.json). `auth` is
 * the front end's own sign-in code (consumer-auth.d.ts). Never run.
 */
import { useSyncExternalStore } from 'react'
import { createShellClient } from 'shell-data-service/client'

// One client for the page, made once, outside any component.
const shellClient = createShellClient({
  appKey: 'crm',
  baseUrl: 'https://shell-data.example.com',
  getToken: async ({ renew }) => (renew ? auth.renewToken() : auth.token),
})

export function useShellState() {
  return useSyncExternalStore(shellClient.subscribe, () => shellClient.state)
}

export function SideBar() {
  const { shell, stale } = useShellState()
  if (shell === null) return null
  return (
    <nav aria-label="Side bar">
      <ul lang={shell.locale}>
        {shell.menus.sidebar.map((item) => (
          <li key={item.id}>{item.href ? <a href={item.href}>{item.label}</a> : item.label}</li>
        ))}
      </ul>
      {stale && <p role="status">Offline: the last menu known is shown.</p>}
    </nav>
  )
}
