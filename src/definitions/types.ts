import type { BrandingRow } from '../db/snapshot-rows.js'
import type { MenuKind, Zone } from '../domain/vocabulary.js'

/** One app as import applies it and export prints it, defaults filled in, to compare by value. */
export interface AppDefinition {
  readonly key: string
  readonly name: string
  readonly description: string | null
  readonly homeUrl: string | null
  /** The language of the items' `label`; a language tag. */
  readonly defaultLocale: string
  readonly branding: BrandingDefinition | null
  readonly menus: Readonly<Record<Zone, readonly ItemDefinition[]>>
}

/** A branding row without its key, whose theme the schema holds to an object. */
export interface BrandingDefinition extends Omit<BrandingRow, 'appKey' | 'theme'> {
  readonly theme: Readonly<Record<string, unknown>>
}

export interface ItemDefinition {
  /** The item_key, unique in its app. */
  readonly id: string
  readonly kind: MenuKind
  /** In the app's default locale. */
  readonly label: string
  /** In other languages, by language tag, tags in code-unit order; empty when none. */
  readonly labels: Readonly<Record<string, string>>
  readonly icon: string | null
  readonly href: string | null
  readonly external: boolean
  /** Sorted; empty means every authenticated caller. */
  readonly roles: readonly string[]
  /** The share of callers it is rolled out to, a whole percent; null: everyone its roles admit. */
  readonly rollout: number | null
  /** Its window, in UTC as export writes it (definitions/instants.ts); null: unbounded. */
  readonly visibleFrom: string | null
  readonly visibleUntil: string | null
  /** In display order; their position is their index. */
  readonly children: readonly ItemDefinition[]
}

export interface DefinitionProblem {
  readonly file: string
  /** JSONPath of the offending value, e.g. `$.apps[0].menus.sidebar[2].id`. */
  readonly path: string
  readonly message: string
}
