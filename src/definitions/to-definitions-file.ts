import { DEFAULT_LOCALE, ZONES } from '../domain/vocabulary.js'
import type { AppDefinition, BrandingDefinition, ItemDefinition } from './types.js'

/** The export format: defaults left out, so a file reads like a hand-written one. */
export function toDefinitionsFile(apps: readonly AppDefinition[]): { apps: object[] } {
  return {
    apps: apps.map((app) => ({
      key: app.key,
      name: app.name,
      description: app.description,
      homeUrl: app.homeUrl,
      ...(app.defaultLocale === DEFAULT_LOCALE ? {} : { defaultLocale: app.defaultLocale }),
      ...(app.branding === null ? {} : { branding: compactBranding(app.branding) }),
      menus: Object.fromEntries(
        ZONES.filter((zone) => app.menus[zone].length > 0).map((zone) => [
          zone,
          app.menus[zone].map(compactItem),
        ]),
      ),
    })),
  }
}

function compactBranding(branding: BrandingDefinition): object {
  const entries = Object.entries(branding).filter(([key, value]) =>
    key === 'theme' ? Object.keys(value as object).length > 0 : value !== null,
  )
  return Object.fromEntries(entries)
}

function compactItem(item: ItemDefinition): object {
  return {
    id: item.id,
    ...(item.kind === 'link' ? {} : { kind: item.kind }),
    label: item.label,
    ...(Object.keys(item.labels).length === 0 ? {} : { labels: item.labels }),
    ...(item.icon === null ? {} : { icon: item.icon }),
    ...(item.href === null ? {} : { href: item.href }),
    ...(item.external ? { external: true } : {}),
    ...(item.roles.length === 0 ? {} : { roles: item.roles }),
    ...(item.rollout === null ? {} : { rollout: item.rollout }),
    ...(item.visibleFrom === null ? {} : { visibleFrom: item.visibleFrom }),
    ...(item.visibleUntil === null ? {} : { visibleUntil: item.visibleUntil }),
    ...(item.children.length === 0 ? {} : { children: item.children.map(compactItem) }),
  }
}
