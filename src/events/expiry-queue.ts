/**
 * Items that end at a time (streams at their token's `exp`), behind one timer
 * for all of them: a binary min-heap by time, whose timer is set for the
 * earliest. An item that ended otherwise is skipped when its time comes
 * (`isDone`), rather than searched for and removed.
 */
export interface ExpiryQueue<T> {
  add(item: T, atMs: number): void
  clear(): void
}

export function createExpiryQueue<T>(options: {
  /** Called once per item whose time has come and that is not done. */
  expire: (item: T) => void
  isDone: (item: T) => boolean
  now?: () => number
}): ExpiryQueue<T> {
  const { expire, isDone } = options
  const now = options.now ?? Date.now
  const heap: { item: T; atMs: number }[] = []
  let timer: NodeJS.Timeout | undefined
  let timerAtMs = Number.POSITIVE_INFINITY

  function schedule(): void {
    const first = heap[0]
    if (first === undefined || first.atMs >= timerAtMs) return
    clearTimeout(timer)
    timerAtMs = first.atMs
    // Timers cannot wait past 2^31 - 1 ms; a later item is rescheduled when this fires.
    const delayMs = Math.min(Math.max(first.atMs - now(), 0), 2 ** 31 - 1)
    timer = setTimeout(fire, delayMs).unref()
  }

  function fire(): void {
    timer = undefined
    timerAtMs = Number.POSITIVE_INFINITY
    const current = now()
    for (let first = heap[0]; first !== undefined && first.atMs <= current; first = heap[0]) {
      pop()
      if (!isDone(first.item)) expire(first.item)
    }
    schedule()
  }

  function pop(): void {
    const last = heap.pop()
    if (last === undefined || heap.length === 0) return
    heap[0] = last
    for (let index = 0; ; ) {
      const left = 2 * index + 1
      const right = left + 1
      let smallest = index
      if ((heap[left]?.atMs ?? Number.POSITIVE_INFINITY) < (heap[smallest]?.atMs ?? 0))
        smallest = left
      if ((heap[right]?.atMs ?? Number.POSITIVE_INFINITY) < (heap[smallest]?.atMs ?? 0))
        smallest = right
      if (smallest === index) return
      swap(index, smallest)
      index = smallest
    }
  }

  function swap(a: number, b: number): void {
    const entry = heap[a] as (typeof heap)[number]
    heap[a] = heap[b] as (typeof heap)[number]
    heap[b] = entry
  }

  return {
    add(item, atMs) {
      heap.push({ item, atMs })
      for (let index = heap.length - 1; index > 0; ) {
        const parent = (index - 1) >> 1
        if ((heap[parent]?.atMs ?? 0) <= atMs) break
        swap(index, parent)
        index = parent
      }
      schedule()
    },
    clear() {
      clearTimeout(timer)
      timer = undefined
      timerAtMs = Number.POSITIVE_INFINITY
      heap.length = 0
    },
  }
}
