/** Window instants in RFC 3339; a time without an offset names no instant: refused, not guessed. */
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/** Milliseconds since the epoch, or null when `text` is no RFC 3339 date-time with an offset. */
export function parseInstant(text: string): number | null {
  const match = DATE_TIME.exec(text)
  if (match === null) return null
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = match
    .slice(1, 7)
    .map(Number)
  const [fraction = '', zulu, sign, offsetHours = '0', offsetMinutes = '0'] = match.slice(7)
  if (hour > 23 || minute > 59 || second > 59) return null
  if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return null
  const local = Date.UTC(year, month - 1, day, hour, minute, second)
  // Date.UTC rolls 2026-02-30 over into March (and years below 100 into the 1900s): a date that
  // does not come back as given is no date.
  if (new Date(local).toISOString().slice(0, 10) !== text.slice(0, 10)) return null
  // Milliseconds are what a Date holds; further digits are dropped.
  const milliseconds = Math.floor(Number(`0${fraction || '.0'}`) * 1000)
  const offset =
    zulu === undefined
      ? (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
      : 0
  return local + milliseconds - offset * 60_000
}

/** In UTC, as export writes it: `2026-12-01T00:00:00Z`, milliseconds only when there are some. */
export function formatInstant(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace('.000Z', 'Z')
}
