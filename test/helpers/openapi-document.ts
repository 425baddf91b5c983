import type { IncomingHttpHeaders } from 'node:http'
import { Ajv, type ValidateFunction } from 'ajv'
import type { Test } from 'tap'

/** The parts of an OpenAPI 3.0 document the tests read. */
export interface OpenApiDocument {
  readonly openapi: string
  readonly security?: unknown
  readonly paths: Record<string, Record<string, Operation>>
  readonly components: {
    readonly schemas: Record<string, object>
    readonly securitySchemes: Record<string, object>
  }
}

export interface Operation {
  readonly operationId?: string
  readonly security?: unknown[]
  readonly parameters?: { name: string; in: string; required?: boolean; schema: object }[]
  readonly responses: Record<string, DeclaredResponse>
}

interface DeclaredResponse {
  readonly description: string
  readonly headers?: Record<string, { schema: object; required?: boolean }>
  readonly content?: Record<string, { schema: object }>
}

/** A response as it came over the wire. */
export interface ObservedResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export interface ResponseChecker {
  /** Checks a real response of `GET path` (as the document spells it) against what the document declares for its status. */
  check(t: Test, path: string, response: ObservedResponse): void
  /** The errors of a JSON body against the schema declared for `GET path`, status and media type. */
  bodyErrors(path: string, status: string, mediaType: string, body: unknown): string[]
  /** `path status` of every response checked so far, `default` for one the operation does not list. */
  readonly checked: Set<string>
}

/**
 * Validates real responses with ajv against the schemas the document declares.
 * Objects are closed on the way (no property the document does not name), so
 * that a key the service sends and the document forgets fails too.
 */
export function createResponseChecker(document: OpenApiDocument): ResponseChecker {
  const bodies = new Ajv({ allErrors: true })
  for (const [name, schema] of Object.entries(document.components.schemas))
    bodies.addSchema(closeObjects(schema), name)
  // Header values are text; a header declared as an integer is checked as one.
  const headers = new Ajv({ allErrors: true, coerceTypes: true })
  const compiled = new Map<object, ValidateFunction>()
  const compile = (ajv: Ajv, schema: object) => {
    let validate = compiled.get(schema)
    if (validate === undefined) {
      validate = ajv.compile(closeObjects(schema))
      compiled.set(schema, validate)
    }
    return validate
  }
  const checked = new Set<string>()

  function declaredFor(path: string, status: string): [string, DeclaredResponse | undefined] {
    const responses = document.paths[path]?.get?.responses ?? {}
    const listed = responses[status]
    return listed === undefined ? ['default', responses.default] : [status, listed]
  }

  return {
    checked,
    check(t, path, response) {
      const [key, declared] = declaredFor(path, String(response.status))
      const label = `GET ${path} ${response.status}`
      checked.add(`${path} ${key}`)
      if (declared === undefined) {
        t.fail(`${label}: not declared`)
        return
      }
      for (const [name, header] of Object.entries(declared.headers ?? {})) {
        const value = response.headers[name.toLowerCase()]
        if (value === undefined) {
          // A header the document says may be absent (Content-Encoding of an identity body).
          if (header.required !== false) t.fail(`${label}: ${name} is declared but not sent`)
          continue
        }
        const validate = compile(headers, {
          type: 'object',
          properties: { [name]: header.schema },
        })
        t.ok(validate({ [name]: value }), `${label}: ${name}: ${value}`, {
          errors: validate.errors,
        })
      }
      if (declared.content === undefined) {
        t.equal(response.body, '', `${label}: no body, as declared`)
        return
      }
      const mediaType = (response.headers['content-type'] ?? '').split(';')[0]?.trim() ?? ''
      const media = declared.content[mediaType]
      if (media === undefined) {
        t.fail(`${label}: ${mediaType} is not among ${Object.keys(declared.content).join(', ')}`)
        return
      }
      if (!mediaType.endsWith('json')) {
        t.ok(response.body.length > 0, `${label}: a ${mediaType} body`)
        return
      }
      const errors = this.bodyErrors(path, key, mediaType, JSON.parse(response.body))
      t.same(errors, [], `${label}: the body validates against the declared schema`)
    },
    bodyErrors(path, status, mediaType, body) {
      const schema = declaredFor(path, status)[1]?.content?.[mediaType]?.schema
      if (schema === undefined) return [`no schema for ${path} ${status} ${mediaType}`]
      const validate = compile(bodies, schema)
      return validate(body)
        ? []
        : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`)
    },
  }
}

/**
 * A copy of a schema with every object that names its properties closed, and
 * the document's `#/components/schemas/x` references pointing at ajv's `x`.
 */
function closeObjects(schema: unknown): object {
  if (Array.isArray(schema)) return schema.map(closeObjects)
  if (typeof schema !== 'object' || schema === null) return schema as object
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string')
      copy[key] = value.replace('#/components/schemas/', '')
    else if (key === 'properties')
      copy[key] = Object.fromEntries(
        Object.entries(value as object).map(([name, property]) => [name, closeObjects(property)]),
      )
    else if (key === 'enum' || key === 'required') copy[key] = value
    else copy[key] = closeObjects(value)
  }
  if ('properties' in copy && !('additionalProperties' in copy)) copy.additionalProperties = false
  return copy
}
