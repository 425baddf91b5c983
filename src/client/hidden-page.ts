/** A page hidden this long gives its stream back; it comes back when the page is shown. */
const HIDDEN_STREAM_MS = 60_000

/**
 * Calls `onChange(true)` once the page has been hidden for a minute, and
 * `onChange(false)` when it is shown again after that; nothing where there is
 * no document. Returns the function that stops following it.
 */
export function followHiddenPage(onChange: (hiddenLong: boolean) => void): () => void {
  const page = globalThis.document as Document | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let hiddenLong = false
  const change = (value: boolean): void => {
    hiddenLong = value
    onChange(value)
  }
  const follow = (): void => {
    clearTimeout(timer)
    if (page?.visibilityState === 'hidden') timer = setTimeout(change, HIDDEN_STREAM_MS, true)
    else if (hiddenLong) change(false)
  }
  page?.addEventListener('visibilitychange', follow)
  follow()
  return () => {
    page?.removeEventListener('visibilitychange', follow)
    clearTimeout(timer)
  }
}
