import { mapZones } from '../domain/vocabulary.js'
import {
  type Describers,
  describeEntryChanges,
  describeFieldChanges,
  describeFields,
  describeJson,
  describeText,
} from './describe-values.js'
import { diffMenuItems } from './diff-menu-items.js'
import { formatKey } from './json-path.js'
import type { AppDefinition, BrandingDefinition } from './types.js'
import { normalizeBranding } from './validate-definitions.js'

/** What importing one app would do: the import follows it, a dry run prints it, so both agree. */
export interface AppPlan {
  readonly key: string
  readonly action: 'create' | 'unchanged' | 'change'
  /** One line per difference, as docs/operations.md, "The command line", shows them; empty when unchanged. */
  readonly differences: readonly string[]
}

/** Typed over every app field but the key (the identity), branding and menus (compared apart). */
const APP_FIELDS: Describers<Omit<AppDefinition, 'key' | 'branding' | 'menus'>> = {
  name: describeText,
  description: describeText,
  homeUrl: describeText,
  defaultLocale: (tag) => tag,
}

/** Every branding field but the theme, which is compared key by key. */
const BRANDING_FIELDS: Describers<Omit<BrandingDefinition, 'theme'>> = {
  productName: describeText,
  logoUrl: describeText,
  faviconUrl: describeText,
  primaryColor: describeText,
  accentColor: describeText,
  footerText: describeText,
}

/** Every branding field at its default: what a new or removed branding's line leaves out. */
const EMPTY_BRANDING = normalizeBranding({})

const NO_MENUS: AppDefinition['menus'] = mapZones(() => [])

/** Compares the stored app (null if none) with the one to import, both normalized as read. */
export function planAppChange(stored: AppDefinition | null, wanted: AppDefinition): AppPlan {
  const differences = [
    ...diffAppFields(stored, wanted),
    ...diffBranding(stored?.branding ?? null, wanted.branding),
    ...diffMenuItems(stored?.menus ?? NO_MENUS, wanted.menus),
  ]
  const action = stored === null ? 'create' : differences.length === 0 ? 'unchanged' : 'change'
  return { key: wanted.key, action, differences }
}

function diffAppFields(stored: AppDefinition | null, wanted: AppDefinition): string[] {
  if (stored === null) return [`+ app: ${describeFields(APP_FIELDS, wanted).join(', ')}`]
  return describeFieldChanges(APP_FIELDS, stored, wanted).map((change) => `~ app: ${change}`)
}

function diffBranding(
  stored: BrandingDefinition | null,
  wanted: BrandingDefinition | null,
): string[] {
  if (stored === null) return wanted === null ? [] : [`+ ${describeWholeBranding(wanted)}`]
  if (wanted === null) return [`- ${describeWholeBranding(stored)}`]
  return [
    ...describeFieldChanges(BRANDING_FIELDS, stored, wanted),
    ...describeEntryChanges(stored.theme, wanted.theme, (key) => `theme${formatKey(key)}`),
  ].map((change) => `~ branding: ${change}`)
}

/** `branding: ` and the fields that are set; a branding row with none is still a row. */
function describeWholeBranding(branding: BrandingDefinition): string {
  const fields = describeFields(BRANDING_FIELDS, branding, EMPTY_BRANDING)
  if (Object.keys(branding.theme).length > 0) fields.push(`theme ${describeJson(branding.theme)}`)
  return fields.length === 0 ? 'branding' : `branding: ${fields.join(', ')}`
}
