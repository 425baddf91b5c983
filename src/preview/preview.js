/**
 * The preview page (local mode): pickers for the app, the roles granted in it,
 * its languages and the user id; the frame of the chosen app as that user
 * holding those roles sees it in that language (rollouts included, since
 * they depend on the user id); kept current by the app's event stream.
 */
import { drawFrame } from './frame.js'
import { createServiceClient, DEFAULT_USER_ID } from './service-client.js'
import { followShellEvents } from './shell-events.js'

const client = createServiceClient()
const appPicker = document.getElementById('app-picker')
const rolePicker = document.getElementById('role-picker')
const localePicker = document.getElementById('locale-picker')
const userIdField = document.getElementById('user-id')
const status = document.getElementById('status')
const frame = document.getElementById('frame')
/** What the local issuer refuses in a user id (C0, DEL and C1), as its request schema says. */
const CONTROL_CHARACTER = /\p{Cc}/u

/** What the page shows now; `selection` is replaced whole whenever a picker changes. */
const page = {
  apps: [],
  /** Every app's granted roles, by app key. */
  grantedRoles: {},
  /** `{ appKey, caller: { sub, roles }, locale, etag, abort }`; `abort` ends its stream and its pending fetches. */
  selection: null,
}

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
frame.addEventListener('click', explainInternalLink)
frame.addEventListener('submit', (event) => event.preventDefault())

loadApps().catch((error) => showStatus(`Cannot load the apps: ${error.message}`))

/** Reads the inventory and the granted roles, then shows `preferredKey` or the first app. */
async function loadApps(preferredKey) {
  const [apps, grantedRoles] = await Promise.all([client.listApps(), client.listGrantedRoles()])
  page.apps = apps
  page.grantedRoles = grantedRoles
  appPicker.replaceChildren(...apps.map((app) => new Option(`${app.name} (${app.key})`, app.key)))
  if (apps.length === 0) {
    stopFollowing()
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

/** Draws the frame for what the pickers say, then follows its changes. */
function showSelection() {
  stopFollowing()
  const abort = new AbortController()
  const selection = {
    appKey: appPicker.value,
    caller: { sub: chosenUserId(), roles: checkedRoles() },
    locale: localePicker.value,
    etag: null,
    abort,
  }
  page.selection = selection
  const refresh = createRefresher(selection)
  refresh()
  followShellEvents({
    appKey: selection.appKey,
    locale: selection.locale,
    getToken: (options) => client.getToken(selection.caller, options),
    onShell: (etag) => {
      if (etag !== selection.etag) refresh({ live: true })
    },
    onGone: () => {
      if (!abort.signal.aborted) showGone(selection.appKey)
    },
    onLive: (live) => {
      if (!abort.signal.aborted)
        showStatus(live ? 'Live: changes show as they are committed.' : 'Reconnecting…')
    },
    signal: abort.signal,
  })
}

/**
 * Fetches the selection's shell with If-None-Match and draws it when it
 * changed. Calls while one runs fold into one more run after it, so an older
 * answer never overwrites a newer one.
 */
function createRefresher(selection) {
  let running = false
  let queued = null
  async function run(options) {
    const { etag, shell } = await client.fetchShell(
      selection.appKey,
      selection.caller,
      selection.locale,
      selection.etag,
    )
    if (selection.abort.signal.aborted) return
    if (shell === null) return showGone(selection.appKey)
    selection.etag = etag
    if (shell === undefined) return
    drawFrame(frame, shell)
    if (options.live) {
      showStatus(`Live: updated at ${new Date().toLocaleTimeString()}.`)
      await refreshGrantedRoles(selection)
    }
  }
  return async function refresh(options = {}) {
    queued = { live: Boolean(queued?.live || options.live) }
    if (running) return
    running = true
    try {
      while (queued !== null && !selection.abort.signal.aborted) {
        const next = queued
        queued = null
        await run(next)
      }
    } catch (error) {
      if (!selection.abort.signal.aborted) showStatus(`Cannot load the frame: ${error.message}`)
    } finally {
      running = false
    }
  }
}

/** A change may grant or withdraw roles: the picker follows, and a withdrawn role is unticked. */
async function refreshGrantedRoles(selection) {
  page.grantedRoles = await client.listGrantedRoles()
  if (page.selection !== selection) return
  const roles = page.grantedRoles[selection.appKey] ?? []
  const shown = [...rolePicker.querySelectorAll('input')].map((box) => box.value)
  if (roles.join('\n') === shown.join('\n')) return
  drawRolePicker(roles, selection.caller.roles)
  if (selection.caller.roles.some((role) => !roles.includes(role))) showSelection()
}

function showGone(appKey) {
  stopFollowing()
  showStatus(`The app "${appKey}" was deleted.`)
  loadApps().catch((error) => showStatus(`Cannot load the apps: ${error.message}`))
}

function stopFollowing() {
  page.selection?.abort.abort()
  page.selection = null
}

function showStatus(text) {
  status.textContent = text
}

/** The app's own links lead nowhere on this service: say where they would go instead. */
function explainInternalLink(event) {
  const link = event.target.closest('a[href]')
  if (link === null || link.target === '_blank') return
  event.preventDefault()
  showStatus(`That link leads to ${link.getAttribute('href')} in the app itself.`)
}
