/**
 * JSON Schema of the app definitions file (contract, section 6): the import
 * format, the export format and `seeds/`. The patterns are the database's.
 */

export const APP_KEY_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$'
export const ITEM_KEY_PATTERN = '^[a-z0-9][a-z0-9._-]{0,62}$'
export const COLOR_PATTERN = '^#[0-9a-fA-F]{6}$'

const nullableText = { type: ['string', 'null'] } as const
// `pattern` applies to strings only, so null passes and a bad string gets one clear error.
const nullableColor = { type: ['string', 'null'], pattern: COLOR_PATTERN } as const

export const definitionsSchema = {
  $id: 'https://shell-data.internal/app-definitions.json',
  type: 'object',
  required: ['apps'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    apps: { type: 'array', items: { $ref: '#/$defs/app' } },
  },
  $defs: {
    app: {
      type: 'object',
      required: ['key', 'name'],
      additionalProperties: false,
      properties: {
        key: { type: 'string', pattern: APP_KEY_PATTERN },
        name: { type: 'string', minLength: 1 },
        description: nullableText,
        homeUrl: nullableText,
        branding: { $ref: '#/$defs/branding' },
        menus: {
          type: 'object',
          additionalProperties: false,
          properties: {
            topbar: { $ref: '#/$defs/items' },
            sidebar: { $ref: '#/$defs/items' },
            footer: { $ref: '#/$defs/items' },
            'user-menu': { $ref: '#/$defs/items' },
          },
        },
      },
    },
    branding: {
      type: 'object',
      additionalProperties: false,
      properties: {
        productName: nullableText,
        logoUrl: nullableText,
        faviconUrl: nullableText,
        primaryColor: nullableColor,
        accentColor: nullableColor,
        footerText: nullableText,
        theme: { type: 'object' },
      },
    },
    items: { type: 'array', items: { $ref: '#/$defs/item' } },
    item: {
      type: 'object',
      required: ['id', 'label'],
      additionalProperties: false,
      properties: {
        id: { type: 'string', pattern: ITEM_KEY_PATTERN },
        kind: { enum: ['link', 'search', 'action'] },
        label: { type: 'string', minLength: 1 },
        icon: nullableText,
        href: nullableText,
        external: { type: 'boolean' },
        roles: {
          type: 'array',
          uniqueItems: true,
          items: { type: 'string', pattern: '\\S' },
        },
        children: { $ref: '#/$defs/items' },
      },
    },
  },
} as const
