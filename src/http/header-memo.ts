/** Distinct values kept per header: browsers send a handful, so these are far more. */
const MAX_VALUES = 64
/** Values kept at most this long: real headers are far shorter. */
const MAX_VALUE_CHARS = 256

/**
 * What each value of a request header gave, remembered so that each is worked out once. A
 * flood of distinct values pushes the oldest out instead of growing the memory.
 */
export function memoizeHeader<T>(compute: (value: string) => T): (value: string) => T {
  const remembered = new Map<string, T>()
  return (value) => {
    const known = remembered.get(value)
    if (known !== undefined) return known
    const result = compute(value)
    if (value.length <= MAX_VALUE_CHARS) {
      if (remembered.size >= MAX_VALUES) {
        const oldest = remembered.keys().next().value
        if (oldest !== undefined) remembered.delete(oldest)
      }
      remembered.set(value, result)
    }
    return result
  }
}
