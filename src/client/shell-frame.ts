/**
 * `<shell-frame app="crm">`: the page frame of an app (branding, top bar,
 * side bar, user menu, footer), drawn in an open shadow root by a shell
 * client and redrawn live. The page's own content goes inside the element,
 * between the side bar and the footer.
 *
 *   <shell-frame app="crm" locales="de,en"><main>…</main></shell-frame>
 *   document.querySelector('shell-frame').getToken = async ({ renew }) => token
 *
 * Attributes: `app`, `base-url`, `locales` (comma-separated), `live="false"`,
 * `storage="none"` and `sub`, as the client's options; `label-topbar`,
 * `label-sidebar`, `label-user-menu`, `label-footer` and `label-new-tab`, the
 * element's own names in the page's language. Themable through the parts
 * named in `part` attributes and `--shell-primary-color` / `--shell-accent-color`.
 *
 * Served by the service as /client/v1/shell-frame.js (these sources in one
 * minified file that imports ./shell-client.js) and exported by the package
 * as `shell-data-service/frame`.
 */
import { drawMenuList, type FrameLabel, type ShellActionDetail, setHref } from './frame-menu.js'
import { FRAME_SKELETON, FRAME_STYLES } from './frame-styles.js'
import {
  createShellClient,
  type GetToken,
  type Shell,
  type ShellClient,
  type ShellState,
  type ShellZone,
} from './shell-client.js'

export type { ShellActionDetail } from './frame-menu.js'

declare global {
  interface HTMLElementTagNameMap {
    'shell-frame': ShellFrame
  }
  interface HTMLElementEventMap {
    /** An action item was chosen; cancel it to stay on the page. */
    'shell-action': CustomEvent<ShellActionDetail>
    /** The frame's client changed state (fired on the element). */
    'shell-state': CustomEvent<ShellState>
  }
}

const ZONES: readonly ShellZone[] = ['topbar', 'sidebar', 'user-menu', 'footer']

/**
 * The element's own names: English unless the page gives its own, in its
 * own language, by the attribute `label-<name>`.
 */
const ENGLISH_LABELS: Readonly<Record<ShellZone | 'new-tab', string>> = {
  topbar: 'Top bar',
  sidebar: 'Side bar',
  'user-menu': 'User menu',
  footer: 'Footer',
  'new-tab': 'opens in a new tab',
}

/** The client's options, by attribute: a change of one starts a new client. */
const CLIENT_ATTRIBUTES = ['app', 'base-url', 'locales', 'live', 'storage', 'sub']

/** The Navigation API, where the browser has it: it also reports pushState and replaceState. */
const navigation = (globalThis as { navigation?: EventTarget }).navigation

/** What pushState and replaceState announce where there is no Navigation API (announceHistoryMoves). */
const HISTORY_MOVED = 'shell-frame-history-moved'

/** Where the element is loaded without a DOM (a server render), it is defined on nothing. */
const ElementBase = (globalThis.HTMLElement ?? class {}) as typeof HTMLElement

export class ShellFrame extends ElementBase {
  static readonly observedAttributes = [
    ...CLIENT_ATTRIBUTES,
    ...Object.keys(ENGLISH_LABELS).map((name) => `label-${name}`),
  ]

  readonly #root: ShadowRoot
  #getToken: GetToken | undefined
  #client: ShellClient | undefined
  #unsubscribe = () => {}
  #drawn: Shell | null = null
  #restartQueued = false
  readonly #markCurrent = () => this.#markCurrentPage()

  constructor() {
    super()
    this.#root = this.attachShadow({ mode: 'open' })
    // Adopted, not a <style> element: a page whose Content-Security-Policy forbids inline
    // styles (style-src without 'unsafe-inline', as the preview page's) still applies it.
    const sheet = new CSSStyleSheet()
    sheet.replaceSync(FRAME_STYLES)
    this.#root.adoptedStyleSheets = [sheet]
    this.#root.innerHTML = FRAME_SKELETON
  }

  /** Gives the caller's token (see the client's `getToken`); a new one starts a new client. */
  get getToken(): GetToken | undefined {
    return this.#getToken
  }

  set getToken(getToken: GetToken | undefined) {
    this.#getToken = getToken
    this.#restart()
  }

  /** The client's state; null while the element has no client (no `app`, no `getToken`). */
  get state(): ShellState | null {
    return this.#client?.state ?? null
  }

  /** Revalidates now (the client's `refresh()`). */
  refresh(): void {
    this.#client?.refresh()
  }

  connectedCallback(): void {
    // A getToken set before the element was defined is an own property that hides the setter.
    if (Object.hasOwn(this, 'getToken')) {
      const getToken = this.getToken
      Reflect.deleteProperty(this, 'getToken')
      this.getToken = getToken
    }
    // A single-page app moves without loading: the current item follows it.
    addEventListener('popstate', this.#markCurrent)
    addEventListener(HISTORY_MOVED, this.#markCurrent)
    navigation?.addEventListener('currententrychange', this.#markCurrent)
    this.#restart()
  }

  disconnectedCallback(): void {
    removeEventListener('popstate', this.#markCurrent)
    removeEventListener(HISTORY_MOVED, this.#markCurrent)
    navigation?.removeEventListener('currententrychange', this.#markCurrent)
    this.#restart()
  }

  attributeChangedCallback(name: string): void {
    // A name is the page's business: drawn again, with the same client.
    if (name.startsWith('label-')) this.#draw(this.#drawn)
    else this.#restart()
  }

  /** A new client for the attributes and getToken, once per task however many of them changed. */
  #restart(): void {
    if (this.#restartQueued) return
    this.#restartQueued = true
    queueMicrotask(() => {
      this.#restartQueued = false
      // The old client's last state (closed, not live) is no news: it is not drawn nor told.
      this.#unsubscribe()
      this.#client?.close()
      this.#client = undefined
      const appKey = this.getAttribute('app')
      const getToken = this.#getToken
      if (!this.isConnected) return
      if (!appKey || getToken === undefined) {
        // No app or no token any more: no frame, rather than another caller's or app's.
        if (this.#drawn !== null) this.#draw(null)
        return
      }
      const locales = this.getAttribute('locales')
      const client = createShellClient({
        appKey,
        getToken,
        baseUrl: this.getAttribute('base-url') || undefined,
        locales: locales === null ? undefined : locales.split(',').map((tag) => tag.trim()),
        live: this.getAttribute('live') !== 'false',
        storage: this.getAttribute('storage') === 'none' ? null : undefined,
        sub: this.getAttribute('sub') || undefined,
      })
      this.#client = client
      this.#unsubscribe = client.subscribe((state) => {
        if (state.shell !== this.#drawn) this.#draw(state.shell)
        this.dispatchEvent(new CustomEvent('shell-state', { detail: state }))
      })
    })
  }

  #draw(shell: Shell | null): void {
    this.#drawn = shell
    const root = this.#root
    this.#part('header').hidden = shell === null
    this.#part('footer').hidden =
      shell === null || (!shell.branding.footerText && shell.menus.footer.length === 0)

    // A live redraw must not take away what the user is typing, nor where the focus is.
    const focusedId = root.activeElement?.closest('[data-item-id]')?.getAttribute('data-item-id')
    const typed = new Map<string, string>()
    for (const input of root.querySelectorAll('input')) typed.set(itemIdOf(input), input.value)
    const newTab = this.#label('new-tab')
    for (const zone of ZONES) {
      const items = shell?.menus[zone] ?? []
      const nav = this.#part(`[data-zone=${zone}]`)
      // A zone without items is no landmark: hidden, it leaves the accessibility tree.
      nav.hidden = items.length === 0
      // The zone's name is the element's, in the page's language; its items are the shell's.
      const name = this.#label(zone)
      nav.setAttribute('aria-label', name.text)
      nav.lang = name.lang
      const list = drawMenuList(items, newTab)
      if (shell !== null) list.lang = shell.locale
      nav.replaceChildren(list)
    }
    for (const input of root.querySelectorAll('input'))
      input.value = typed.get(itemIdOf(input)) ?? ''
    if (focusedId) {
      const item = root.querySelector(`[data-item-id="${CSS.escape(focusedId)}"]`)
      item?.querySelector<HTMLElement>('a, button, input')?.focus()
    }
    if (shell === null) return

    const { app, branding, user } = shell
    setColor(this, '--shell-primary-color', branding.primaryColor)
    setColor(this, '--shell-accent-color', branding.accentColor)
    setHref(this.#part<HTMLAnchorElement>('[part~=brand]'), app.homeUrl)
    const logo = this.#part<HTMLImageElement>('[part~=logo]')
    if (branding.logoUrl === null) logo.hidden = true
    else if (logo.getAttribute('src') !== branding.logoUrl) {
      logo.hidden = true
      logo.onload = () => (logo.hidden = false)
      logo.src = branding.logoUrl
    }
    // Texts from the shell carry its language; nothing else of the frame does.
    const texts: [string, string][] = [
      ['product-name', branding.productName],
      ['user-name', user.name ?? user.username ?? user.sub],
      ['footer-text', branding.footerText ?? ''],
    ]
    for (const [part, text] of texts) {
      const element = this.#part(`[part~=${part}]`)
      element.textContent = text
      element.lang = shell.locale
    }
    this.#markCurrentPage()
  }

  /** An element of the skeleton, which is always there. */
  #part<T extends HTMLElement = HTMLElement>(selector: string): T {
    return this.#root.querySelector(selector) as T
  }

  /**
   * One of the element's own names: the page's from `label-<name>`, in the
   * page's language (the nearest `lang` around the element), else English.
   */
  #label(name: keyof typeof ENGLISH_LABELS): FrameLabel {
    const given = this.getAttribute(`label-${name}`)
    if (given === null) return { text: ENGLISH_LABELS[name], lang: 'en' }
    return { text: given, lang: this.closest('[lang]')?.getAttribute('lang') ?? '' }
  }

  /** `aria-current="page"` on the item that leads to the page shown. */
  #markCurrentPage(): void {
    for (const link of this.#root.querySelectorAll<HTMLAnchorElement>('li > a[href]')) {
      const here = link.origin === location.origin && link.pathname === location.pathname
      if (here) link.setAttribute('aria-current', 'page')
      else link.removeAttribute('aria-current')
    }
  }
}

function itemIdOf(element: Element): string {
  return element.closest('[data-item-id]')?.getAttribute('data-item-id') ?? ''
}

/** A brand colour on the element, where the page's own rules for it give way. */
function setColor(host: HTMLElement, property: string, color: string | null): void {
  if (color === null) host.style.removeProperty(property)
  else host.style.setProperty(property, color)
}

/**
 * Where the browser has no Navigation API (older than early 2026), nothing
 * tells a page that pushState or replaceState moved it: they are wrapped,
 * once, to announce it as HISTORY_MOVED.
 */
function announceHistoryMoves(): void {
  if (navigation !== undefined || globalThis.history === undefined) return
  for (const method of ['pushState', 'replaceState'] as const) {
    const move = history[method]
    history[method] = function (this: History, ...args: Parameters<History['pushState']>) {
      move.apply(this, args)
      dispatchEvent(new Event(HISTORY_MOVED))
    }
  }
}

if (globalThis.customElements !== undefined && customElements.get('shell-frame') === undefined) {
  announceHistoryMoves()
  customElements.define('shell-frame', ShellFrame)
}
