import {
  APP_KEY_PATTERN,
  COLOR_PATTERN,
  ITEM_KEY_PATTERN,
  LANGUAGE_TAG_PATTERN,
  MENU_KINDS,
  mapZones,
} from '../domain/vocabulary.js'

/** JSON Schema of the definitions file (import, export, `seeds/`), with the database's patterns. */

const nullableText = { type: ['string', 'null'] } as const
// `pattern` applies to strings only, so null passes and a bad string gets one clear error.
const nullableColor = { type: ['string', 'null'], pattern: COLOR_PATTERN } as const

/** Only the fields listed: a misspelt field is refused, not silently left at its default. */
function closedObject(properties: Record<string, object>, required: readonly string[] = []) {
  return { type: 'object', required, additionalProperties: false, properties }
}

export const definitionsSchema = {
  $id: 'https://shell-data.internal/app-definitions.json',
  ...closedObject(
    { $schema: { type: 'string' }, apps: { type: 'array', items: { $ref: '#/$defs/app' } } },
    ['apps'],
  ),
  $defs: {
    app: closedObject(
      {
        key: { type: 'string', pattern: APP_KEY_PATTERN },
        name: { type: 'string', minLength: 1 },
        description: nullableText,
        homeUrl: nullableText,
        defaultLocale: { type: 'string', pattern: LANGUAGE_TAG_PATTERN },
        branding: { $ref: '#/$defs/branding' },
        menus: closedObject(mapZones(() => ({ $ref: '#/$defs/items' }))),
      },
      ['key', 'name'],
    ),
    branding: closedObject({
      productName: nullableText,
      logoUrl: nullableText,
      faviconUrl: nullableText,
      primaryColor: nullableColor,
      accentColor: nullableColor,
      footerText: nullableText,
      theme: { type: 'object' },
    }),
    items: { type: 'array', items: { $ref: '#/$defs/item' } },
    item: closedObject(
      {
        id: { type: 'string', pattern: ITEM_KEY_PATTERN },
        kind: { enum: MENU_KINDS },
        label: { type: 'string', minLength: 1 },
        labels: {
          type: 'object',
          propertyNames: { pattern: LANGUAGE_TAG_PATTERN },
          additionalProperties: { type: 'string', minLength: 1 },
        },
        icon: nullableText,
        href: nullableText,
        external: { type: 'boolean' },
        roles: {
          type: 'array',
          uniqueItems: true,
          items: { type: 'string', pattern: '\\S' },
        },
        rollout: { type: ['integer', 'null'], minimum: 0, maximum: 100 },
        // Their form and order are checked apart (find-conflicts.ts), with messages of their own.
        visibleFrom: nullableText,
        visibleUntil: nullableText,
        children: { $ref: '#/$defs/items' },
      },
      ['id', 'label'],
    ),
  },
}
