/**
 * `<shell-frame>`'s shadow root: its stylesheet and its skeleton, which
 * drawing fills in (shell-frame.ts). Neither is indented: the served module
 * carries them as they are written.
 */

/**
 * As little as makes a usable frame; everything else is the page's, through
 * the parts and the two colours (the branding sets them on the element).
 */
export const FRAME_STYLES = `
:host { display: flex; flex-direction: column; min-height: 100%; }
:host([hidden]), [hidden] { display: none !important; }
ul { margin: 0; padding: 0; list-style: none; }
a { color: inherit; }
button { font: inherit; color: inherit; background: none; border: 0; padding: 0; cursor: pointer; }
:focus-visible { outline: 2px solid var(--shell-accent-color, currentColor); outline-offset: 2px; }
header { display: flex; align-items: center; gap: 1rem; padding: 0.5rem 1rem; background: var(--shell-primary-color, #3b4a5c); color: #fff; }
[part~=brand] { display: flex; align-items: center; gap: 0.5rem; font-weight: 600; text-decoration: none; }
[part~=logo] { height: 1.75rem; }
[data-zone=topbar] { flex: 1; }
[data-zone=topbar] > ul, [data-zone=footer] > ul { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; }
details { position: relative; margin-inline-start: auto; }
summary { cursor: pointer; }
[data-zone=user-menu] { position: absolute; right: 0; z-index: 1; min-width: 12rem; padding: 0.25rem 0; background: #fff; color: #1f2933; border: 1px solid #c5ccd3; border-radius: 4px; }
[data-zone=user-menu] :is(a, button, span) { display: block; padding: 0.375rem 0.75rem; text-align: start; text-decoration: none; }
[part~=search] { min-width: 12rem; padding: 0.25rem 0.5rem; border: 0; border-radius: 4px; font: inherit; }
[part~=body] { display: flex; flex: 1; }
[data-zone=sidebar] { flex: 0 0 13rem; padding: 0.75rem 0; border-inline-end: 3px solid var(--shell-accent-color, #7a8a9c); }
[data-zone=sidebar] :is(a, button, span) { display: block; padding: 0.375rem 1rem; text-decoration: none; }
[data-zone=sidebar] ul ul { padding-inline-start: 0.875rem; }
[aria-current=page] { font-weight: 600; }
[part~=content] { flex: 1; min-width: 0; }
footer { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; padding: 0.5rem 1rem; border-top: 3px solid var(--shell-accent-color, #7a8a9c); font-size: 0.875em; }
a[target=_blank]::after { content: " \\2197" / ""; }
.new-tab { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
`

/**
 * The frame's skeleton: the landmarks a screen reader lists (a banner, a
 * navigation per zone that has items, a content info), each zone with
 * `data-zone` and `part="zone <zone>"`; the page's content in the slot. The
 * zones' names are set by the element, in the page's language.
 */
export const FRAME_SKELETON = `<header part="header" hidden>
<a part="brand"><img part="logo" alt="" hidden><span part="product-name"></span></a>
<nav data-zone="topbar" part="zone topbar" hidden></nav>
<details part="user"><summary part="user-name"></summary>
<nav data-zone="user-menu" part="zone user-menu" hidden></nav></details>
</header>
<div part="body">
<nav data-zone="sidebar" part="zone sidebar" hidden></nav>
<div part="content"><slot></slot></div>
</div>
<footer part="footer" hidden><span part="footer-text"></span>
<nav data-zone="footer" part="zone footer" hidden></nav></footer>`
