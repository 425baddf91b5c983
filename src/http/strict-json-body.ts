import { Ajv } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

/**
 * A route's `validatorCompiler` for a JSON body its schema must describe exactly: fastify's own
 * coerces types and drops unknown properties (`coerceTypes: 'array'`, `removeAdditional: true`),
 * so `["alice"]` would pass as `"alice"` and a forbidden property vanish instead of a 400.
 */
export const compileStrictJsonBody: FastifySchemaCompiler<object> = ({ schema }) =>
  new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: false }).compile(schema)
