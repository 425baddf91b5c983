/**
 * A zone's items as `<shell-frame>` draws them: nested lists of links,
 * search forms, action buttons and group headings, by kind.
 */
import type { ShellMenuItem } from './shell-types.js'

/** What `shell-action` carries: the action item's id. */
export interface ShellActionDetail {
  readonly id: string
}

/** One of the element's own names, and the language it is in: the page's, not the shell's. */
export interface FrameLabel {
  readonly text: string
  readonly lang: string
}

/** Links lead to web pages, mail and phone numbers only: never `javascript:` from a menu row. */
const SAFE_PROTOCOLS: ReadonlySet<string> = new Set(['http:', 'https:', 'mailto:', 'tel:'])

export function drawMenuList(
  items: readonly ShellMenuItem[],
  newTab: FrameLabel,
): HTMLUListElement {
  const list = document.createElement('ul')
  for (const item of items) {
    const entry = document.createElement('li')
    entry.dataset.itemId = item.id
    entry.dataset.kind = item.kind
    entry.setAttribute('part', 'item')
    entry.append(drawControl(item, newTab))
    if (item.children.length > 0) entry.append(drawMenuList(item.children, newTab))
    list.append(entry)
  }
  return list
}

/** By kind: a search field, an action button, a link, or (no href) a group's heading. */
function drawControl(item: ShellMenuItem, newTab: FrameLabel): HTMLElement {
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
    note.lang = newTab.lang
    note.textContent = ` (${newTab.text})`
    link.append(note)
  }
  return link
}

/** The href as written (it resolves against the page, as any link's does), or none. */
export function setHref(link: HTMLAnchorElement, href: string | null): void {
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
