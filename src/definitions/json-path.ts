/** `/apps/0/menus/user-menu` → `$.apps[0].menus["user-menu"]` */
export function pointerToPath(pointer: string): string {
  if (pointer === '') return '$'
  const segments = pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
  return `$${segments.map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : formatKey(segment))).join('')}`
}

/** A key in a JSONPath: `.name`, or `["user-menu"]` when it is no identifier. */
export function formatKey(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
}
