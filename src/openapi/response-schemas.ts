import { LANGUAGE_TAG_PATTERN, MENU_KINDS, mapZones } from '../domain/vocabulary.js'
import { problemSchema } from '../http/problem.js'

/**
 * Response schemas of the API as docs/api.md documents them. The 200 bodies are precomputed bytes:
 * these document them and tests check them; fastify's serializer never runs on the hot path.
 */
const nullableString = { type: ['string', 'null'] }

/** Every property of every body is always sent, null when it has no value: all are required. */
function objectSchema(properties: Record<string, object>) {
  return { type: 'object', required: Object.keys(properties), properties }
}

/** One app as `app` in the shell response and as an entry of the apps inventory. */
const appSummaryProperties = {
  key: { type: 'string' },
  name: { type: 'string' },
  description: nullableString,
  homeUrl: nullableString,
}

const menuItemSchema = {
  $id: 'menuItem',
  ...objectSchema({
    id: { type: 'string' },
    kind: { type: 'string', enum: MENU_KINDS },
    label: { type: 'string' },
    icon: nullableString,
    href: nullableString,
    external: { type: 'boolean' },
    children: { type: 'array', items: { $ref: 'menuItem#' } },
  }),
}
const menuList = { type: 'array', items: { $ref: 'menuItem#' } }

export const shellBodySchema = objectSchema({
  app: objectSchema(appSummaryProperties),
  branding: objectSchema({
    productName: { type: 'string' },
    logoUrl: nullableString,
    faviconUrl: nullableString,
    primaryColor: nullableString,
    accentColor: nullableString,
    footerText: nullableString,
    // Free-form JSON, said outright: some generators read a bare object schema as empty.
    theme: { type: 'object', additionalProperties: true },
  }),
  user: objectSchema({
    sub: { type: 'string' },
    username: nullableString,
    name: nullableString,
    email: nullableString,
    roles: { type: 'array', items: { type: 'string' } },
  }),
  menus: objectSchema(mapZones(() => menuList)),
  locale: {
    type: 'string',
    pattern: LANGUAGE_TAG_PATTERN,
    description: 'The locale the labels are in, chosen from Accept-Language; as stored.',
  },
})

/** One app of the inventory: its summary and the languages its shell speaks. */
const inventoryEntrySchema = objectSchema({
  ...appSummaryProperties,
  defaultLocale: { type: 'string', pattern: LANGUAGE_TAG_PATTERN },
  locales: { type: 'array', items: { type: 'string', pattern: LANGUAGE_TAG_PATTERN } },
})

export const appsBodySchema = objectSchema({
  apps: { type: 'array', items: inventoryEntrySchema },
})

/** Schemas the others refer to by `$ref` (every error's body is `problem#`); added to fastify. */
export const sharedSchemas = [menuItemSchema, { $id: 'problem', ...problemSchema }]
