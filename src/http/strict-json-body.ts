import { Ajv } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

/**
 * Fastify's own validator coerces types and drops unknown properties (its
 * defaults `coerceTypes: 'array'`, `removeAdditional: true`), which suits a
 * query string but lets a JSON body through that its schema refuses: `123`
 * or `["alice"]` would pass as the string `"alice"`, and a property that
 * `additionalProperties: false` forbids would vanish instead of failing.
 * This one takes the JSON body as sent: a value of the wrong type, or a
 * property the schema does not list, is a 400.
 */
/** A route's `validatorCompiler` for a JSON body its schema must describe exactly. */
export const compileStrictJsonBody: FastifySchemaCompiler<object> = ({ schema }) =>
  new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: false }).compile(schema)
