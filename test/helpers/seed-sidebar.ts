/**
 * The seed app's sidebar (seeds/crm.json) as callers of each role see it,
 * item ids in order: the one fixture every test of the seed data compares with.
 */
export const SEED_SIDEBAR_BY_ROLE: readonly (readonly [string[], string[]])[] = [
  [[], ['dashboard', 'contacts', 'accounts', 'activities']],
  [['crm-sales'], ['dashboard', 'contacts', 'accounts', 'leads', 'opportunities', 'activities']],
  [['crm-manager'], ['dashboard', 'contacts', 'accounts', 'activities', 'reports']],
  [['crm-admin'], ['dashboard', 'contacts', 'accounts', 'activities', 'reports', 'admin']],
  [
    ['crm-admin', 'crm-manager', 'crm-sales'],
    [
      'dashboard',
      'contacts',
      'accounts',
      'leads',
      'opportunities',
      'activities',
      'reports',
      'admin',
    ],
  ],
]

/** What a crm-sales caller sees in the seed app's sidebar. */
export const SEED_SALES_SIDEBAR = SEED_SIDEBAR_BY_ROLE[1]?.[1] ?? []

/** What a caller with no role of the app sees. */
export const SEED_OPEN_SIDEBAR = SEED_SIDEBAR_BY_ROLE[0]?.[1] ?? []

/** What a caller holding every role of the app sees: every item. */
export const SEED_FULL_SIDEBAR = SEED_SIDEBAR_BY_ROLE[4]?.[1] ?? []
