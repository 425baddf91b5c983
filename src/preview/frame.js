/**
 * Draws one shell response (`GET /api/v1/shell/{appKey}`) into the page's
 * frame: branding, top bar, nested side bar, user menu, footer. Every text
 * goes in as text, never as markup: labels come from the database.
 */

/** Colours for an app whose branding sets none. */
const DEFAULT_PRIMARY = '#3b4a5c'
const DEFAULT_ACCENT = '#7a8a9c'
/** Link targets a preview may carry; anything else (javascript:, data:) is drawn without one. */
const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:'])

export function drawFrame(frame, shell) {
  const { app, branding, user, menus } = shell
  frame.lang = shell.locale
  frame.style.setProperty('--primary', branding.primaryColor ?? DEFAULT_PRIMARY)
  frame.style.setProperty(
    '--accent',
    branding.accentColor ?? branding.primaryColor ?? DEFAULT_ACCENT,
  )

  const brand = frame.querySelector('.brand')
  setHref(brand, app.homeUrl)
  brand.querySelector('.brand-name').textContent = branding.productName
  brand.querySelector('.brand-mark').textContent = branding.productName.slice(0, 1).toUpperCase()
  drawLogo(brand.querySelector('.brand-logo'), brand.querySelector('.brand-mark'), branding.logoUrl)

  frame.querySelector('.topbar-items').replaceChildren(...menus.topbar.map(drawItem))
  frame.querySelector('.user-name').textContent = user.name ?? user.username ?? user.sub
  frame.querySelector('.user-menu-items').replaceChildren(...menus['user-menu'].map(drawListItem))
  frame.querySelector('.sidebar').replaceChildren(drawList(menus.sidebar))
  frame.querySelector('.footer-text').textContent = branding.footerText ?? ''
  frame.querySelector('.footer-items').replaceChildren(...menus.footer.map(drawListItem))

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
  frame.hidden = false
}

/** The logo when it loads; the product's initial while it does not (no logo, or one that 404s). */
function drawLogo(image, mark, logoUrl) {
  const source = logoUrl ?? ''
  if (image.dataset.source === source) return
  image.dataset.source = source
  image.hidden = true
  mark.hidden = false
  image.onload = () => {
    image.hidden = false
    mark.hidden = true
  }
  image.onerror = () => {
    image.hidden = true
    mark.hidden = false
  }
  if (source === '') image.removeAttribute('src')
  else image.src = source
}

function drawList(items) {
  const list = document.createElement('ul')
  list.append(...items.map(drawListItem))
  return list
}

function drawListItem(item) {
  const entry = document.createElement('li')
  entry.append(drawItem(item))
  if (item.children.length > 0) entry.append(drawList(item.children))
  return entry
}

/** A search field, an action button, a link, or (no href) a group's heading. */
function drawItem(item) {
  if (item.kind === 'search') {
    const form = document.createElement('form')
    form.setAttribute('role', 'search')
    form.className = 'search'
    const input = document.createElement('input')
    input.type = 'search'
    input.placeholder = item.label
    input.setAttribute('aria-label', item.label)
    form.append(input)
    return form
  }
  if (item.kind === 'action') {
    const button = document.createElement('button')
    button.type = 'button'
    button.textContent = item.label
    return button
  }
  if (item.href === null) {
    const heading = document.createElement('span')
    heading.className = 'group'
    heading.textContent = item.label
    return heading
  }
  const link = document.createElement('a')
  link.textContent = item.label
  setHref(link, item.href)
  if (item.external) {
    link.target = '_blank'
    link.rel = 'noopener noreferrer'
    const note = document.createElement('span')
    note.className = 'external'
    note.textContent = ' (opens in a new tab)'
    link.append(note)
  }
  return link
}

function setHref(link, href) {
  if (href !== null && isSafeHref(href)) link.setAttribute('href', href)
  else link.removeAttribute('href')
}

function isSafeHref(href) {
  try {
    return SAFE_PROTOCOLS.has(new URL(href, document.baseURI).protocol)
  } catch {
    return false
  }
}

function describe(term, value) {
  const name = document.createElement('dt')
  name.textContent = term
  const detail = document.createElement('dd')
  detail.textContent = value
  return [name, detail]
}
