/**
 * `<shell-frame app="crm">`: the page frame of an app (branding, top bar,
 * side bar, user menu, footer), drawn in an open shadow root by a shell
 * client and redrawn live. The page's own content goes inside the element,
 * between the side bar and the footer.
 *
 *   <shell-frame app="crm" locales="de,en"><main>…</main></shell-frame>
 *   document.querySelector('shell-frame').getToken = async ({ renew }) => token
 *
 * Attributes: `app`, `base-url`, `locales` (comma-separated), `live="false"`
 * and `sub`, as the client's options. Themable through the parts named in
 * `part` attributes and `--shell-primary-color` / `--shell-accent-color`.
 */
import {
  createShellClient,
  type GetToken,
  type Shell,
  type ShellClient,
  type ShellMenuItem,
  type ShellState,
  type ShellZone,
} from './shell-client.js'

/** What `shell-action` carries: the action item's id. */
export interface ShellActionDetail {
  readonly id: string
}

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

/** Links lead to web pages, mail and phone numbers only: never `javascript:` from a menu row. */
const SAFE_PROTOCOLS: ReadonlySet<string> = new Set(['http:', 'https:', 'mailto:', 'tel:'])

const ZONES: readonly ShellZone[] = ['topbar', 'sidebar', 'user-menu', 'footer']

/**
 * As little as makes a usable frame; everything else is the page's, through
 * the parts and the two colours (the branding sets them on the element).
 */
const STYLES = `
:host { display: flex; flex-direction: column; min-height: 100%; }
:host([hidden]), [hidden] { display: none !important; }
ul { margin: 0; padding: 0; list-style: none; }
a { color: inherit; }
button { font: inherit; color: inherit; background: none; border: 0; padding: 0; cursor: pointer; }
:focus-visible { outline: 2px solid var(--shell-accent-color, currentColor); outline-offset: 2px; }
header { display: flex; align-items: center; gap: 1rem; padding: 0.5rem 1rem;
  background: var(--shell-primary-color, #3b4a5c); color: #fff; }
[part~=brand] { display: flex; align-items: center; gap: 0.5rem; font-weight: 600; text-decoration: none; }
[part~=logo] { height: 1.75rem; }
[data-zone=topbar] { flex: 1; }
[data-zone=topbar] > ul, [data-zone=footer] > ul { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; }
details { position: relative; }
summary { cursor: pointer; }
[data-zone=user-menu] { position: absolute; right: 0; z-index: 1; min-width: 12rem; padding: 0.25rem 0;
  background: #fff; color: #1f2933; border: 1px solid #c5ccd3; border-radius: 4px; }
[data-zone=user-menu] :is(a, button, span) { display: block; padding: 0.375rem 0.75rem; text-align: start; text-decoration: none; }
[part~=search] { min-width: 12rem; padding: 0.25rem 0.5rem; border: 0; border-radius: 4px; font: inherit; }
[part~=body] { display: flex; flex: 1; }
[data-zone=sidebar] { flex: 0 0 13rem; padding: 0.75rem 0; border-inline-end: 3px solid var(--shell-accent-color, #7a8a9c); }
[data-zone=sidebar] :is(a, button, span) { display: block; padding: 0.375rem 1rem; text-decoration: none; }
[data-zone=sidebar] ul ul { padding-inline-start: 0.875rem; }
[aria-current=page] { font-weight: 600; }
[part~=content] { flex: 1; min-width: 0; }
footer { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; padding: 0.5rem 1rem;
  border-top: 3px solid var(--shell-accent-color, #7a8a9c); font-size: 0.875em; }
a[target=_blank]::after { content: " \\2197" / ""; }
.new-tab { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
`

/**
 * The frame's skeleton: landmarks a screen reader lists (banner, four
 * labelled navigations, content info), each zone with `data-zone` and
 * `part="zone <zone>"`; the page's content in the slot.
 */
const SKELETON = `<header part="header" hidden>
  <a part="brand"><img part="logo" alt="" hidden><span part="product-name"></span></a>
  <nav data-zone="topbar" part="zone topbar" aria-label="Top bar"></nav>
  <details part="user"><summary part="user-name"></summary>
    <nav data-zone="user-menu" part="zone user-menu" aria-label="User menu"></nav></details>
</header>
<div part="body">
  <nav data-zone="sidebar" part="zone sidebar" aria-label="Side bar" hidden></nav>
  <div part="content"><slot></slot></div>
</div>
<footer part="footer" hidden><span part="footer-text"></span>
  <nav data-zone="footer" part="zone footer" aria-label="Footer"></nav></footer>`

/** Where the element is loaded without a DOM (a server render), it is defined on nothing. */
const ElementBase = (globalThis.HTMLElement ?? class {}) as typeof HTMLElement

export class ShellFrame extends ElementBase {
  static readonly observedAttributes = ['app', 'base-url', 'locales', 'live', 'sub']

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
    sheet.replaceSync(STYLES)
    this.#root.adoptedStyleSheets = [sheet]
    this.#root.innerHTML = SKELETON
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
    addEventListener('popstate', this.#markCurrent)
    this.#restart()
  }

  disconnectedCallback(): void {
    removeEventListener('popstate', this.#markCurrent)
    this.#restart()
  }

  attributeChangedCallback(): void {
    this.#restart()
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
    // The frame's parts, not the page's content in the slot, are in the shell's language.
    for (const part of root.querySelectorAll<HTMLElement>('header, footer, [data-zone=sidebar]')) {
      part.hidden = shell === null
      if (shell !== null) part.lang = shell.locale
    }
    if (shell === null) return
    const { app, branding, user, menus } = shell
    setColor(this, '--shell-primary-color', branding.primaryColor)
    setColor(this, '--shell-accent-color', branding.accentColor)

    const brand = this.#part<HTMLAnchorElement>('[part~=brand]')
    setHref(brand, app.homeUrl)
    this.#part('[part~=product-name]').textContent = branding.productName
    const logo = this.#part<HTMLImageElement>('[part~=logo]')
    if (branding.logoUrl === null) logo.hidden = true
    else if (logo.getAttribute('src') !== branding.logoUrl) {
      logo.hidden = true
      logo.onload = () => (logo.hidden = false)
      logo.src = branding.logoUrl
    }
    this.#part('[part~=user-name]').textContent = user.name ?? user.username ?? user.sub
    this.#part('[part~=footer-text]').textContent = branding.footerText ?? ''

    // A live redraw must not take away what the user is typing, nor where the focus is.
    const focusedId = root.activeElement?.closest('[data-item-id]')?.getAttribute('data-item-id')
    const typed = new Map<string, string>()
    for (const input of root.querySelectorAll('input')) typed.set(itemIdOf(input), input.value)
    for (const zone of ZONES) {
      this.#part(`[data-zone=${zone}]`).replaceChildren(this.#drawList(menus[zone]))
    }
    for (const input of root.querySelectorAll('input'))
      input.value = typed.get(itemIdOf(input)) ?? ''
    if (focusedId) {
      const item = root.querySelector(`[data-item-id="${CSS.escape(focusedId)}"]`)
      item?.querySelector<HTMLElement>('a, button, input')?.focus()
    }
    this.#markCurrentPage()
  }

  /** An element of the skeleton, which is always there. */
  #part<T extends HTMLElement = HTMLElement>(selector: string): T {
    return this.#root.querySelector(selector) as T
  }

  #drawList(items: readonly ShellMenuItem[]): HTMLUListElement {
    const list = document.createElement('ul')
    for (const item of items) {
      const entry = document.createElement('li')
      entry.dataset.itemId = item.id
      entry.dataset.kind = item.kind
      entry.setAttribute('part', 'item')
      entry.append(this.#drawControl(item))
      if (item.children.length > 0) entry.append(this.#drawList(item.children))
      list.append(entry)
    }
    return list
  }

  /** By kind: a search field, an action button, a link, or (no href) a group's heading. */
  #drawControl(item: ShellMenuItem): HTMLElement {
    const href = item.href !== null && isSafeHref(item.href) ? item.href : null
    if (item.kind === 'search') {
      const input = document.createElement('input')
      input.type = 'search'
      input.placeholder = item.label
      input.setAttribute('aria-label', item.label)
      input.setAttribute('part', 'search')
      const search = document.createElement(href === null ? 'div' : 'form')
      search.setAttribute('role', 'search')
      search.append(input)
      if (search instanceof HTMLFormElement && href !== null) {
        search.method = 'get'
        search.action = resolve(href)
        input.name = 'q'
      }
      return search
    }
    if (item.kind === 'action') {
      const button = document.createElement('button')
      button.type = 'button'
      button.textContent = item.label
      button.setAttribute('part', 'action')
      button.addEventListener('click', () => {
        const detail: ShellActionDetail = { id: item.id }
        const event = new CustomEvent('shell-action', {
          bubbles: true,
          composed: true,
          cancelable: true,
          detail,
        })
        if (button.dispatchEvent(event) && href !== null) location.assign(resolve(href))
      })
      return button
    }
    if (href === null) {
      const heading = document.createElement('span')
      heading.textContent = item.label
      heading.setAttribute('part', 'label')
      return heading
    }
    const link = document.createElement('a')
    link.textContent = item.label
    link.setAttribute('part', 'link')
    setHref(link, href)
    if (item.external) {
      link.target = '_blank'
      link.rel = 'noopener noreferrer'
      const note = document.createElement('span')
      note.className = 'new-tab'
      note.textContent = ' (opens in a new tab)'
      link.append(note)
    }
    return link
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

/** The href as written (it resolves against the page, as any link's does), or none. */
function setHref(link: HTMLAnchorElement, href: string | null): void {
  if (href !== null && isSafeHref(href)) link.setAttribute('href', href)
  else link.removeAttribute('href')
}

function resolve(href: string): string {
  return new URL(href, document.baseURI).href
}

function isSafeHref(href: string): boolean {
  try {
    return SAFE_PROTOCOLS.has(new URL(href, document.baseURI).protocol)
  } catch {
    return false
  }
}

if (globalThis.customElements !== undefined && customElements.get('shell-frame') === undefined) {
  customElements.define('shell-frame', ShellFrame)
}
