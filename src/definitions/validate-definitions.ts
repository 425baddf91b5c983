import { Ajv, type ErrorObject } from 'ajv'
import { DEFAULT_LOCALE, mapZones, sortedEntries, type Zone } from '../domain/vocabulary.js'
import {
  findBadLinks,
  findBadWindows,
  findDuplicateItemIds,
  findLabelConflicts,
  readLooseApps,
} from './find-conflicts.js'
import { formatInstant, parseInstant } from './instants.js'
import { formatKey, pointerToPath } from './json-path.js'
import { definitionsSchema } from './schema.js'
import type {
  AppDefinition,
  BrandingDefinition,
  DefinitionProblem,
  ItemDefinition,
} from './types.js'

const validateSchema = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(
  definitionsSchema,
)

export type ParseResult = (
  | { readonly ok: true; readonly apps: readonly AppDefinition[] }
  | { readonly ok: false; readonly problems: readonly DefinitionProblem[] }
) & {
  /** `$.apps[i].key` where it is a string, valid file or not: for findDuplicateAppKeys. */
  readonly appKeys: readonly (string | undefined)[]
}

/** Checks one file whole: JSON, the schema, and find-conflicts.ts even where the schema failed. */
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
  const schemaProblems = validateSchema(document)
    ? []
    : (validateSchema.errors ?? [])
        // Each bad label tag also fails its `propertyNames` wrapper: report it once, as a pattern.
        .filter((error) => error.keyword !== 'propertyNames')
        .map((error) => ({ file, ...describeSchemaError(error) }))
  // A rollout of 2.5 fails its type twice (integer, null): one line is enough.
  const byLine = new Map(schemaProblems.map((problem) => [formatProblem(problem), problem]))
  const problems: DefinitionProblem[] = [...byLine.values()]
  problems.push(
    ...findDuplicateItemIds(file, apps),
    ...findLabelConflicts(file, apps),
    ...findBadWindows(file, apps),
    ...findBadLinks(file, apps),
  )
  if (problems.length > 0) return { ok: false, problems, appKeys }
  return { ok: true, apps: (document as { apps: RawApp[] }).apps.map(normalizeApp), appKeys }
}

export function formatProblem(problem: DefinitionProblem): string {
  return `${problem.file}: ${problem.path}: ${problem.message}`
}

/** An item as a file may write it: any field but its id and label left to its default. */
type RawItem = Pick<ItemDefinition, 'id' | 'label'> &
  Partial<Omit<ItemDefinition, 'id' | 'label' | 'children'>> & { readonly children?: RawItem[] }

/** An app as a file may write it: any field but its key and name left to its default. */
type RawApp = Pick<AppDefinition, 'key' | 'name'> &
  Partial<Pick<AppDefinition, 'description' | 'homeUrl' | 'defaultLocale'>> & {
    readonly branding?: Partial<BrandingDefinition>
    readonly menus?: Partial<Record<Zone, RawItem[]>>
  }

function normalizeApp(raw: RawApp): AppDefinition {
  return {
    key: raw.key,
    name: raw.name,
    description: raw.description ?? null,
    homeUrl: raw.homeUrl ?? null,
    defaultLocale: raw.defaultLocale ?? DEFAULT_LOCALE,
    branding: raw.branding === undefined ? null : normalizeBranding(raw.branding),
    menus: mapZones((zone) => (raw.menus?.[zone] ?? []).map(normalizeItem)),
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
    labels: sortLabels(raw.labels ?? {}),
    icon: raw.icon ?? null,
    href: raw.href ?? null,
    external: raw.external ?? false,
    roles: [...(raw.roles ?? [])].sort(),
    rollout: raw.rollout ?? null,
    visibleFrom: normalizeInstant(raw.visibleFrom),
    visibleUntil: normalizeInstant(raw.visibleUntil),
    children: (raw.children ?? []).map(normalizeItem),
  }
}

/** Labels with their tags in code-unit order, so that two definitions compare by value. */
export function sortLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(sortedEntries(Object.entries(labels)))
}

/** In UTC, as export writes it, so that a file and the database compare by value. */
function normalizeInstant(text: string | null | undefined): string | null {
  const instant = typeof text === 'string' ? parseInstant(text) : null
  return instant === null ? null : formatInstant(instant)
}

function describeSchemaError(error: ErrorObject): Omit<DefinitionProblem, 'file'> {
  const path = pointerToPath(error.instancePath)
  const keyPath = (key: unknown) => path + formatKey(String(key))
  if (path.endsWith('.rollout')) return { path, message: 'must be a whole percent from 0 to 100' }
  switch (error.keyword) {
    case 'required':
      return { path: keyPath(error.params.missingProperty), message: 'is required' }
    case 'additionalProperties':
      return { path: keyPath(error.params.additionalProperty), message: 'is not a known field' }
    case 'pattern':
      // A key of `labels` that is no language tag: the path names the key.
      if (typeof error.propertyName === 'string') {
        return {
          path: keyPath(error.propertyName),
          message: `is not a language tag (must match ${error.params.pattern})`,
        }
      }
      return { path, message: `must match ${error.params.pattern}` }
    case 'enum':
      return {
        path,
        message: `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`,
      }
    default:
      return { path, message: error.message ?? error.keyword }
  }
}
