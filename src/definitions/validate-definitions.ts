import { Ajv, type ErrorObject } from 'ajv'
import { type MenuKind, mapZones, ZONES, type Zone } from '../vocabulary.js'
import { definitionsSchema } from './schema.js'
import type {
  AppDefinition,
  BrandingDefinition,
  DefinitionProblem,
  ItemDefinition,
} from './types.js'

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true })
const validateSchema = ajv.compile(definitionsSchema)

export type ParseResult = (
  | { readonly ok: true; readonly apps: readonly AppDefinition[] }
  | { readonly ok: false; readonly problems: readonly DefinitionProblem[] }
) & {
  /** `$.apps[i].key` where it is a string, valid file or not: for findDuplicateAppKeys. */
  readonly appKeys: readonly (string | undefined)[]
}

/**
 * Parses one definitions file and checks all of it: JSON syntax, the schema
 * (every error, not the first), then what a schema cannot say (item ids
 * unique in their app), the latter also where the schema failed, as far as
 * the document's shape allows. Returns every problem with its JSON path.
 */
export function parseDefinitions(text: string, file: string): ParseResult {
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch (error) {
    return {
      ok: false,
      problems: [{ file, path: '$', message: `not valid JSON: ${(error as Error).message}` }],
      appKeys: [],
    }
  }
  const apps = readLooseApps(document)
  const appKeys = apps.map((app) => (typeof app?.key === 'string' ? app.key : undefined))
  const problems: DefinitionProblem[] = validateSchema(document)
    ? []
    : (validateSchema.errors ?? []).map((error) => describeSchemaError(file, error))
  problems.push(...findDuplicateItemIds(file, apps))
  if (problems.length > 0) return { ok: false, problems, appKeys }
  return { ok: true, apps: (document as { apps: RawApp[] }).apps.map(normalizeApp), appKeys }
}

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
        problems.push({
          file,
          path,
          message: `app "${key}" is defined twice (first at ${first})`,
        })
    })
  }
  return problems
}

export function formatProblem(problem: DefinitionProblem): string {
  return `${problem.file}: ${problem.path}: ${problem.message}`
}

interface RawItem {
  id: string
  kind?: MenuKind
  label: string
  icon?: string | null
  href?: string | null
  external?: boolean
  roles?: string[]
  children?: RawItem[]
}

interface RawApp {
  key: string
  name: string
  description?: string | null
  homeUrl?: string | null
  branding?: Partial<BrandingDefinition>
  menus?: Partial<Record<Zone, RawItem[]>>
}

function normalizeApp(raw: RawApp): AppDefinition {
  const menuOf = (zone: Zone) => (raw.menus?.[zone] ?? []).map(normalizeItem)
  return {
    key: raw.key,
    name: raw.name,
    description: raw.description ?? null,
    homeUrl: raw.homeUrl ?? null,
    branding: raw.branding === undefined ? null : normalizeBranding(raw.branding),
    menus: mapZones(menuOf),
  }
}

export function normalizeBranding(raw: Partial<BrandingDefinition>): BrandingDefinition {
  return {
    productName: raw.productName ?? null,
    logoUrl: raw.logoUrl ?? null,
    faviconUrl: raw.faviconUrl ?? null,
    primaryColor: raw.primaryColor ?? null,
    accentColor: raw.accentColor ?? null,
    footerText: raw.footerText ?? null,
    theme: raw.theme ?? {},
  }
}

function normalizeItem(raw: RawItem): ItemDefinition {
  return {
    id: raw.id,
    kind: raw.kind ?? 'link',
    label: raw.label,
    icon: raw.icon ?? null,
    href: raw.href ?? null,
    external: raw.external ?? false,
    roles: [...(raw.roles ?? [])].sort(),
    children: (raw.children ?? []).map(normalizeItem),
  }
}

/** A JSON object as read, before or without the schema's blessing. */
type LooseObject = Readonly<Record<string, unknown>>

function asLooseObject(value: unknown): LooseObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as LooseObject)
    : undefined
}

function asLooseArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : []
}

/** `$.apps` entries, each an object or undefined, whatever else the document gets wrong. */
function readLooseApps(document: unknown): (LooseObject | undefined)[] {
  return asLooseArray(asLooseObject(document)?.apps).map(asLooseObject)
}

function findDuplicateItemIds(
  file: string,
  apps: readonly (LooseObject | undefined)[],
): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  apps.forEach((app, appIndex) => {
    if (app === undefined) return
    const appName = typeof app.key === 'string' ? `app "${app.key}"` : `$.apps[${appIndex}]`
    const seen = new Map<string, string>()
    const visit = (items: readonly unknown[], path: string) => {
      items.forEach((value, index) => {
        const item = asLooseObject(value)
        const itemPath = `${path}[${index}]`
        if (typeof item?.id === 'string') {
          const first = seen.get(item.id)
          if (first === undefined) seen.set(item.id, `${itemPath}.id`)
          else
            problems.push({
              file,
              path: `${itemPath}.id`,
              message: `item id "${item.id}" is used twice in ${appName} (first at ${first})`,
            })
        }
        visit(asLooseArray(item?.children), `${itemPath}.children`)
      })
    }
    const menus = asLooseObject(app.menus)
    for (const zone of ZONES)
      visit(asLooseArray(menus?.[zone]), `$.apps[${appIndex}].menus${formatKey(zone)}`)
  })
  return problems
}

function describeSchemaError(file: string, error: ErrorObject): DefinitionProblem {
  const path = pointerToPath(error.instancePath)
  switch (error.keyword) {
    case 'required':
      return {
        file,
        path: path + formatKey(String(error.params.missingProperty)),
        message: 'is required',
      }
    case 'additionalProperties':
      return {
        file,
        path: path + formatKey(String(error.params.additionalProperty)),
        message: 'is not a known field',
      }
    case 'pattern':
      return { file, path, message: `must match ${error.params.pattern}` }
    case 'enum':
      return {
        file,
        path,
        message: `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`,
      }
    default:
      return { file, path, message: error.message ?? error.keyword }
  }
}

/** `/apps/0/menus/user-menu` → `$.apps[0].menus["user-menu"]` */
function pointerToPath(pointer: string): string {
  if (pointer === '') return '$'
  const segments = pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
  return `$${segments.map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : formatKey(segment))).join('')}`
}

function formatKey(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
}
