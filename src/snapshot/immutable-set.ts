/**
 * A Set that refuses changes after construction. `Object.freeze` does not
 * protect a Set's entries, and a snapshot's role sets are shared by every
 * request, so a stray `add` must fail loudly instead of changing what
 * other callers see.
 */
export class ImmutableSet<T> extends Set<T> implements ReadonlySet<T> {
  constructor(values: Iterable<T>) {
    // The base constructor would call the overridden `add`, so fill it here.
    super()
    for (const value of values) super.add(value)
    Object.freeze(this)
  }

  override add(_value: T): this {
    throw new TypeError('ImmutableSet cannot be changed')
  }

  override delete(_value: T): boolean {
    throw new TypeError('ImmutableSet cannot be changed')
  }

  override clear(): void {
    throw new TypeError('ImmutableSet cannot be changed')
  }
}
