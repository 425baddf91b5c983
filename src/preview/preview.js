/**
 * The preview page (local mode): pickers for the app, the roles granted in it,
 * its languages and the user id; the frame of the chosen app as that user
 * holding those roles sees it in that language (rollouts included, since
 * they depend on the user id), kept current live. The frame is the
 * `<shell-frame>` this service serves every front end, with tokens from the
 * local issuer as its getToken: the page has no protocol code of its own.
 */
import '/client/v1/shell-frame.js'

/** The local-mode helpers answer only requests that carry it, which no other site's page can send. */
const LOCAL_PAGE_HEADERS = { 'x-shell-preview': '1' }
/** A token this close to its expiry is replaced before use, so no request goes out with a dying one. */
const TOKEN_RENEW_MARGIN_MS = 30_000
/** The user id the page shows the frame to unless told another: the local issuer's default too. */
const DEFAULT_USER_ID = 'preview-user'
/** What the local issuer refuses in a user id (C0, DEL and C1), as its request schema says. */
const CONTROL_CHARACTER = /\p{Cc}/u

const appPicker = document.getElementById('app-picker')
const rolePicker = document.getElementById('role-picker')
const localePicker = document.getElementById('locale-picker')
const userIdField = document.getElementById('user-id')
const status = document.getElementById('status')
const frame = document.getElementById('frame')

/** What the page shows now; `selection` is replaced whole whenever a picker changes. */
const page = {
  apps: [],
  /** Every app's granted roles, by app key. */
  grantedRoles: {},
  /** `{ appKey, caller: { sub, roles }, locale }` */
  selection: null,
  /** The frame's last state, to tell a live change from the first draw. */
  shown: null,
}
/** The current token of each caller, by its user id and sorted roles as JSON. */
const tokens = new Map()

appPicker.addEventListener('change', () => selectApp(appPicker.value))
rolePicker.addEventListener('change', () => showSelection())
localePicker.addEventListener('change', () => showSelection())
// On Enter or on leaving the field, as a select's change: not at every keystroke, which
// would ask for a token and reopen the stream for each prefix of the id being typed.
userIdField.addEventListener('change', () => {
  userIdField.value = userIdField.value.trim()
  // A pasted tab, say, which the local issuer would refuse: the field goes back to the user
  // shown, so that no other picker's change sends it either.
  if (CONTROL_CHARACTER.test(userIdField.value)) {
    userIdField.value = page.selection?.caller.sub ?? DEFAULT_USER_ID
    return showStatus('A user id cannot hold control characters (tabs, line breaks).')
  }
  // No selection: no app yet, or one being reloaded, which will read the field when it is shown.
  if (page.selection !== null && chosenUserId() !== page.selection.caller.sub) showSelection()
})
frame.addEventListener('shell-state', (event) => showState(event.detail))
frame.addEventListener('click', explainInternalLink)
frame.addEventListener('shell-action', (event) => {
  event.preventDefault()
  showStatus(`"${event.detail.id}" is an action of the app itself.`)
})
// A search submits inside the frame's shadow root; this page may send no form anywhere.
frame.shadowRoot.addEventListener('submit', (event) => {
  event.preventDefault()
  showStatus(`A search goes to ${event.target.getAttribute('action')} in the app itself.`)
})

loadApps().catch((error) => showStatus(`Cannot load the apps: ${error.message}`))

/**
 * A token from the local issuer for `caller` (`{ sub, roles }`), reused
 * until shortly before it expires; `renew` forces a new one (after a 401).
 */
async function getPreviewToken({ sub, roles }, { renew = false } = {}) {
  const key = JSON.stringify([sub, [...roles].sort()])
  const held = tokens.get(key)
  if (!renew && held !== undefined && held.expiresAtMs - Date.now() > TOKEN_RENEW_MARGIN_MS)
    return held.token
  const body = await readJson(
    await fetch('/local-issuer/preview-token', {
      method: 'POST',
      headers: { ...LOCAL_PAGE_HEADERS, 'content-type': 'application/json' },
      body: JSON.stringify({ sub, roles: [...roles] }),
      cache: 'no-store',
    }),
  )
  tokens.set(key, { token: body.access_token, expiresAtMs: Date.now() + body.expires_in * 1000 })
  return body.access_token
}

/** Reads the inventory and the granted roles, then shows `preferredKey` or the first app. */
async function loadApps(preferredKey) {
  // The inventory is the same for every caller: any will do.
  const token = await getPreviewToken({ sub: DEFAULT_USER_ID, roles: [] })
  const [inventory, granted] = await Promise.all([
    fetch('/api/v1/apps', { headers: { authorization: `Bearer ${token}` }, cache: 'no-store' }),
    fetch('/preview/granted-roles', { headers: LOCAL_PAGE_HEADERS, cache: 'no-store' }),
  ])
  page.apps = (await readJson(inventory)).apps
  page.grantedRoles = (await readJson(granted)).grantedRoles
  const { apps } = page
  appPicker.replaceChildren(...apps.map((app) => new Option(`${app.name} (${app.key})`, app.key)))
  if (apps.length === 0) {
    page.selection = null
    frame.removeAttribute('app')
    frame.hidden = true
    showStatus('No app is registered yet: import one with `npx shell-data import FILE`.')
    return
  }
  selectApp(apps.some((app) => app.key === preferredKey) ? preferredKey : apps[0].key)
}

function selectApp(appKey) {
  const app = page.apps.find((candidate) => candidate.key === appKey)
  appPicker.value = appKey
  drawRolePicker(page.grantedRoles[appKey] ?? [], [])
  localePicker.replaceChildren(...app.locales.map((locale) => new Option(locale, locale)))
  localePicker.value = app.defaultLocale
  showSelection()
}

/** One checkbox per role granted in the app, `checked` ticked. */
function drawRolePicker(roles, checked) {
  const boxes = roles.map((role) => {
    const box = document.createElement('input')
    box.type = 'checkbox'
    box.value = role
    box.checked = checked.includes(role)
    const label = document.createElement('label')
    label.append(box, ` ${role}`)
    return label
  })
  const hint = document.createElement('p')
  hint.className = 'hint'
  hint.textContent = 'No role is granted in this app: everyone sees the same frame.'
  rolePicker.replaceChildren(rolePicker.querySelector('legend'), ...(boxes.length ? boxes : [hint]))
}

function checkedRoles() {
  return [...rolePicker.querySelectorAll('input:checked')].map((box) => box.value)
}

/** The user id typed, trimmed; the default for an empty field. */
function chosenUserId() {
  return userIdField.value.trim() || DEFAULT_USER_ID
}

/**
 * The frame for what the pickers say: a new app, language or getToken makes
 * the element start a new client, with its own event stream.
 */
function showSelection() {
  const selection = {
    appKey: appPicker.value,
    caller: { sub: chosenUserId(), roles: checkedRoles() },
    locale: localePicker.value,
  }
  page.selection = selection
  page.shown = null
  frame.setAttribute('app', selection.appKey)
  frame.setAttribute('locales', selection.locale)
  frame.getToken = ({ renew }) => getPreviewToken(selection.caller, { renew })
  frame.hidden = false
}

/** What the frame's client says, in the status line and the caller block. */
function showState(state) {
  const selection = page.selection
  const before = page.shown
  page.shown = state
  if (selection === null) return
  if (state.error?.status === 404) return showGone(selection.appKey)
  if (state.shell !== null) drawCaller(state.shell)
  if (state.error !== null) return showStatus(`Cannot load the frame: ${state.error.detail}`)
  if (!state.live) return showStatus(before?.live ? 'Reconnecting…' : 'Connecting…')
  // A change while live, after the network's first answer: not the first draw of a selection.
  const changed = before?.live && before.source === 'network' && before.etag !== state.etag
  if (!changed) return showStatus('Live: changes show as they are committed.')
  showStatus(`Live: updated at ${new Date().toLocaleTimeString()}.`)
  refreshGrantedRoles(selection).catch((error) =>
    showStatus(`Cannot load the granted roles: ${error.message}`),
  )
}

/** The app and its caller below the frame's side bar, where the app's own page would be. */
function drawCaller(shell) {
  const { app, user } = shell
  frame.querySelector('.app-name').textContent = app.name
  frame.querySelector('.app-description').textContent = app.description ?? ''
  frame
    .querySelector('.caller')
    .replaceChildren(
      ...describe('User', user.name ?? user.username ?? user.sub),
      ...describe('User id', user.sub),
      ...describe('Roles', user.roles.length > 0 ? user.roles.join(', ') : 'none'),
      ...describe('Language', shell.locale),
    )
}

function describe(term, value) {
  const name = document.createElement('dt')
  name.textContent = term
  const detail = document.createElement('dd')
  detail.textContent = value
  return [name, detail]
}

/** A change may grant or withdraw roles: the picker follows, and a withdrawn role is unticked. */
async function refreshGrantedRoles(selection) {
  const response = await fetch('/preview/granted-roles', {
    headers: LOCAL_PAGE_HEADERS,
    cache: 'no-store',
  })
  page.grantedRoles = (await readJson(response)).grantedRoles
  if (page.selection !== selection) return
  const roles = page.grantedRoles[selection.appKey] ?? []
  const shown = [...rolePicker.querySelectorAll('input')].map((box) => box.value)
  if (roles.join('\n') === shown.join('\n')) return
  drawRolePicker(roles, selection.caller.roles)
  if (selection.caller.roles.some((role) => !roles.includes(role))) showSelection()
}

function showGone(appKey) {
  page.selection = null
  showStatus(`The app "${appKey}" was deleted.`)
  loadApps().catch((error) => showStatus(`Cannot load the apps: ${error.message}`))
}

function showStatus(text) {
  status.textContent = text
}

/** The app's own links lead nowhere on this service: say where they would go instead. */
function explainInternalLink(event) {
  const link = event.composedPath().find((node) => node instanceof HTMLAnchorElement)
  if (link === undefined || !link.hasAttribute('href') || link.target === '_blank') return
  event.preventDefault()
  showStatus(`That link leads to ${link.getAttribute('href')} in the app itself.`)
}

/** A response's JSON body, or an Error with its problem's detail. */
async function readJson(response) {
  const body = await response.json().catch(() => ({}))
  if (!response.ok) throw new Error(`${response.status} ${body.detail ?? response.statusText}`)
  return body
}
