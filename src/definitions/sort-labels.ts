import { sortedEntries } from '../domain/vocabulary.js'

/** Labels with their tags in code-unit order, so that two definitions compare by value. */
export function sortLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(sortedEntries(Object.entries(labels)))
}
