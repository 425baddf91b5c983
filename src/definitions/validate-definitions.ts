import { Ajv, type ErrorObject } from 'ajv'
import { type MenuKind, ZONES, type Zone } from '../snapshot/types.js'
import { definitionsSchema } from './schema.js'
import type {
  AppDefinition,
  BrandingDefinition,
  DefinitionProblem,
  ItemDefinition,
} from './types.js'

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true })
const validateSchema = ajv.compile(definitionsSchema)

export type ParseResult =
  | { readonly ok: true; readonly apps: readonly AppDefinition[] }
  | { readonly ok: false; readonly problems: readonly DefinitionProblem[] }

/**
 * Parses one definitions file and checks all of it: JSON syntax, the schema
 * (every error, not the first), then what a schema cannot say (item ids
 * unique in their app). Returns every problem with its JSON path.
 */
export function parseDefinitions(text: string, file: string): ParseResult {
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch (error) {
    return {
      ok: false,
      problems: [{ file, path: '$', message: `not valid JSON: ${(error as Error).message}` }],
    }
  }
  if (!validateSchema(document)) {
    return {
      ok: false,
      problems: (validateSchema.errors ?? []).map((error) => describeSchemaError(file, error)),
    }
  }
  const rawApps = (document as { apps: RawApp[] }).apps
  const problems = findDuplicateItemIds(file, rawApps)
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, apps: rawApps.map(normalizeApp) }
}

/** Several files are one import: an app key defined twice is a problem too. */
export function findDuplicateAppKeys(
  files: readonly { file: string; apps: readonly AppDefinition[] }[],
): DefinitionProblem[] {
  const seen = new Map<string, string>()
  const problems: DefinitionProblem[] = []
  for (const { file, apps } of files) {
    apps.forEach((app, index) => {
      const path = `$.apps[${index}].key`
      const first = seen.get(app.key)
      if (first === undefined) seen.set(app.key, `${file} ${path}`)
      else
        problems.push({
          file,
          path,
          message: `app "${app.key}" is defined twice (first at ${first})`,
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
    menus: {
      topbar: menuOf('topbar'),
      sidebar: menuOf('sidebar'),
      footer: menuOf('footer'),
      'user-menu': menuOf('user-menu'),
    },
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

function findDuplicateItemIds(file: string, apps: readonly RawApp[]): DefinitionProblem[] {
  const problems: DefinitionProblem[] = []
  apps.forEach((app, appIndex) => {
    const seen = new Map<string, string>()
    const visit = (items: readonly RawItem[], path: string) => {
      items.forEach((item, index) => {
        const itemPath = `${path}[${index}]`
        const first = seen.get(item.id)
        if (first === undefined) seen.set(item.id, `${itemPath}.id`)
        else
          problems.push({
            file,
            path: `${itemPath}.id`,
            message: `item id "${item.id}" is used twice in app "${app.key}" (first at ${first})`,
          })
        visit(item.children ?? [], `${itemPath}.children`)
      })
    }
    for (const zone of ZONES)
      visit(app.menus?.[zone] ?? [], `$.apps[${appIndex}].menus${formatKey(zone)}`)
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
