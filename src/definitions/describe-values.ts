import { isDeepStrictEqual } from 'node:util'
import { compareCodeUnits } from '../domain/vocabulary.js'

/** Values as a dry run prints them: text JSON-quoted so it cannot blur into the words around it. */

/** Says how to print each field of T, so that a field added to T is not forgotten by a diff. */
export type Describers<T> = { readonly [K in keyof T]-?: (value: T[K]) => string }

const ABSENT = '(none)'

export function describeText(value: string | null): string {
  return value === null ? ABSENT : JSON.stringify(value)
}

/** No role means every authenticated caller, which a reviewer should not have to know. */
export function describeRoles(roles: readonly string[]): string {
  return roles.length === 0
    ? '(everyone)'
    : `[${roles.map((role) => JSON.stringify(role)).join(', ')}]`
}

export function describeLabels(labels: Readonly<Record<string, string>>): string {
  const entries = Object.entries(labels)
  if (entries.length === 0) return ABSENT
  return entries.map(([tag, label]) => `${tag} ${JSON.stringify(label)}`).join(', ')
}

/** Any JSON value, objects with their keys sorted, so the same value always prints the same. */
export function describeJson(value: unknown): string {
  return JSON.stringify(value, (_key, nested: unknown) =>
    typeof nested === 'object' && nested !== null && !Array.isArray(nested)
      ? Object.fromEntries(Object.entries(nested).sort(([a], [b]) => compareCodeUnits(a, b)))
      : nested,
  )
}

/** `field old → new` for each field that differs, in the describers' order. */
export function describeFieldChanges<T>(describers: Describers<T>, from: T, to: T): string[] {
  const changes: string[] = []
  for (const field of Object.keys(describers) as (keyof T & string)[]) {
    if (isDeepStrictEqual(from[field], to[field])) continue
    const describe = describers[field]
    changes.push(`${field} ${describe(from[field])} → ${describe(to[field])}`)
  }
  return changes
}

/** `field value` for each field not at its default, as a new app, branding or item is listed. */
export function describeFields<T>(
  describers: Describers<T>,
  value: T,
  defaults: Partial<T> = {},
): string[] {
  return (Object.keys(describers) as (keyof T & string)[])
    .filter(
      (field) =>
        !(Object.hasOwn(defaults, field) && isDeepStrictEqual(value[field], defaults[field])),
    )
    .map((field) => `${field} ${describers[field](value[field])}`)
}

/** Each key of a map (labels, a theme) whose value differs, sorted: `fr (none) → "Prospects"`. */
export function describeEntryChanges(
  from: Readonly<Record<string, unknown>>,
  to: Readonly<Record<string, unknown>>,
  describeKey: (key: string) => string,
): string[] {
  const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort(compareCodeUnits)
  const describeEntry = (entries: Readonly<Record<string, unknown>>, key: string) =>
    Object.hasOwn(entries, key) ? describeJson(entries[key]) : ABSENT
  return keys
    .filter(
      (key) =>
        Object.hasOwn(from, key) !== Object.hasOwn(to, key) ||
        !isDeepStrictEqual(from[key], to[key]),
    )
    .map((key) => `${describeKey(key)} ${describeEntry(from, key)} → ${describeEntry(to, key)}`)
}
