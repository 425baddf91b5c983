import { DEFAULT_LOCALE, isAllowedLink, ZONES } from '../domain/vocabulary.js'
import { parseInstant } from './instants.js'
import { formatKey } from './json-path.js'
import type { DefinitionProblem } from './types.js'

/** What a schema cannot say, checked on the file as read, valid or not: every problem at once. */

/** Several files are one import: an app key defined twice is a problem too. */
export function findDuplicateAppKeys(
  files: readonly { file: string; appKeys: readonly (string | undefined)[] }[],
): DefinitionProblem[] {
  const seen = new Map<string, string>()
  const problems: DefinitionProblem[] = []
  for (const { file, appKeys } of files) {
    appKeys.forEach((key, index) => {
      if (key === undefined) return
      const path = `$.apps[${index}].key`
      const first = seen.get(key)
      if (first === undefined) seen.set(key, `${file} ${path}`)
      else
        problems.push({ file, path, message: `app "${key}" is defined twice (first at ${first})` })
    })
  }
  return problems
}

/** A JSON object as read, before or without the schema's blessing. */
type LooseObject = Readonly<Record<string, unknown>>
/** `$.apps` entries, each an object or undefined, whatever else the document gets wrong. */
type LooseApps = readonly (LooseObject | undefined)[]

function asLooseObject(value: unknown): LooseObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as LooseObject)
    : undefined
}

function asLooseArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : []
}

export function readLooseApps(document: unknown): LooseApps {
  return asLooseArray(asLooseObject(document)?.apps).map(asLooseObject)
}

/** Every item of every app, as read, with its JSON path, depth first in document order. */
function forEachLooseItem(
  apps: LooseApps,
  visit: (
    item: LooseObject | undefined,
    itemPath: string,
    app: LooseObject,
    appIndex: number,
  ) => void,
): void {
  apps.forEach((app, appIndex) => {
    if (app === undefined) return
    const walk = (items: readonly unknown[], path: string) => {
      items.forEach((value, index) => {
        const item = asLooseObject(value)
        const itemPath = `${path}[${index}]`
        visit(item, itemPath, app, appIndex)
        walk(asLooseArray(item?.children), `${itemPath}.children`)
      })
    }
    const menus = asLooseObject(app.menus)
    for (const zone of ZONES)
      walk(asLooseArray(menus?.[zone]), `$.apps[${appIndex}].menus${formatKey(zone)}`)
  })
}

export function findDuplicateItemIds(file: string, apps: LooseApps): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  const seenByApp = new Map<LooseObject, Map<string, string>>()
  forEachLooseItem(apps, (item, itemPath, app, appIndex) => {
    if (typeof item?.id !== 'string') return
    const seen = seenByApp.get(app) ?? new Map<string, string>()
    seenByApp.set(app, seen)
    const first = seen.get(item.id)
    if (first === undefined) {
      seen.set(item.id, `${itemPath}.id`)
      return
    }
    const appName = typeof app.key === 'string' ? `app "${app.key}"` : `$.apps[${appIndex}]`
    problems.push({
      file,
      path: `${itemPath}.id`,
      message: `item id "${item.id}" is used twice in ${appName} (first at ${first})`,
    })
  })
  return problems
}

/** Labels a schema cannot refuse: one in the default locale (its `label`), or a language twice. */
export function findLabelConflicts(file: string, apps: LooseApps): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  forEachLooseItem(apps, (item, itemPath, app) => {
    const labels = asLooseObject(item?.labels)
    if (labels === undefined) return
    const defaultLocale = typeof app.defaultLocale === 'string' ? app.defaultLocale : DEFAULT_LOCALE
    const seen = new Map<string, string>()
    for (const tag of Object.keys(labels)) {
      const path = `${itemPath}.labels${formatKey(tag)}`
      const lowercase = tag.toLowerCase()
      const first = seen.get(lowercase)
      if (lowercase === defaultLocale.toLowerCase()) {
        problems.push({
          file,
          path,
          message: `is the app's default locale (${defaultLocale}): put that label in "label"`,
        })
      } else if (first !== undefined) {
        problems.push({ file, path, message: `names the same language as "${first}"` })
      }
      seen.set(lowercase, first ?? tag)
    }
  })
  return problems
}

/** An item's window: each bound an RFC 3339 date-time with an offset, `visibleFrom` the earlier. */
export function findBadWindows(file: string, apps: LooseApps): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  forEachLooseItem(apps, (item, itemPath) => {
    const readBound = (field: 'visibleFrom' | 'visibleUntil') => {
      const text = item?.[field]
      if (typeof text !== 'string') return null
      const instant = parseInstant(text)
      if (instant === null) {
        problems.push({
          file,
          path: `${itemPath}.${field}`,
          message: 'is not an RFC 3339 date-time with an offset, such as 2026-12-01T00:00:00Z',
        })
      }
      return instant
    }
    const from = readBound('visibleFrom')
    const until = readBound('visibleUntil')
    if (from !== null && until !== null && from >= until) {
      problems.push({
        file,
        path: `${itemPath}.visibleUntil`,
        message: 'must be later than visibleFrom',
      })
    }
  })
  return problems
}

/** Characters of a refused link shown in its problem: enough to recognise it, not a whole `data:`. */
const SHOWN_LINK_LENGTH = 60

/** Links with a scheme other than https:, http: and mailto:, naming the app or item and the field. */
export function findBadLinks(file: string, apps: LooseApps): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  const check = (value: unknown, path: string, field: string, owner: string) => {
    if (typeof value !== 'string' || isAllowedLink(value)) return
    const shown = JSON.stringify(value.slice(0, SHOWN_LINK_LENGTH))
    const more = value.length > SHOWN_LINK_LENGTH ? '…' : ''
    problems.push({
      file,
      path: `${path}.${field}`,
      message: `${field} of ${owner} is ${shown}${more}: not a path, a relative reference or an https:, http: or mailto: URL`,
    })
  }
  apps.forEach((app, appIndex) => {
    if (app === undefined) return
    const appPath = `$.apps[${appIndex}]`
    const owner = typeof app.key === 'string' ? `app "${app.key}"` : appPath
    check(app.homeUrl, appPath, 'homeUrl', owner)
    const branding = asLooseObject(app.branding)
    check(branding?.logoUrl, `${appPath}.branding`, 'logoUrl', owner)
    check(branding?.faviconUrl, `${appPath}.branding`, 'faviconUrl', owner)
  })
  forEachLooseItem(apps, (item, itemPath) => {
    const owner = typeof item?.id === 'string' ? `item "${item.id}"` : itemPath
    check(item?.href, itemPath, 'href', owner)
  })
  return problems
}
