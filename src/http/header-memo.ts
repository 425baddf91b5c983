/**
 * What each value of a request header gave, remembered: browsers send a
 * handful of distinct values, so each is worked out once. A flood of
 * distinct values (junk, or an attacker's) pushes the oldest out instead of
 * growing the memory, and a value longer than any a browser sends is worked
 * out every time, never kept.
 */
export function memoizeHeader<T>(
  compute: (value: string) => T,
  limits: { readonly maxValues: number; readonly maxChars: number } = DEFAULT_LIMITS,
): (value: string) => T {
  const remembered = new Map<string, T>()
  return (value) => {
    const known = remembered.get(value)
    if (known !== undefined) return known
    const result = compute(value)
    if (value.length <= limits.maxChars) {
      if (remembered.size >= limits.maxValues) {
        const oldest = remembered.keys().next().value
        if (oldest !== undefined) remembered.delete(oldest)
      }
      remembered.set(value, result)
    }
    return result
  }
}

/** Real headers are far shorter and far fewer than this. */
const DEFAULT_LIMITS = { maxValues: 64, maxChars: 256 }
