/**
 * A file written by one version of the service is read by the next: its layout, and the layout
 * of each app's content in it (src/snapshot/app-content.ts), cannot change under the same
 * FILE_FORMAT_VERSION. This test pins the bytes each version writes for data that sets every
 * field; a change of them fails it until the version moves and its bytes are pinned here.
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import type { SnapshotRows } from '../../src/db/snapshot-rows.js'
import { recordsOf } from '../../src/snapshot/build.js'
import {
  encodeJsonLine,
  encodeRecordLine,
  FILE_FORMAT,
  FILE_FORMAT_VERSION,
} from '../../src/snapshot-file/file-format.js'
import { buildSnapshot } from '../helpers/build-snapshot.js'

/** SHA-256 (hex) of the file each format version writes for the data below. */
const PINNED_LAYOUTS: Readonly<Record<number, string>> = {
  2: '30a54597f8502f8d8d6150f78fbd8ddcce0d7423c7e6bba07b5e1a155d5865f5',
}

const LOADED_AT = new Date('2026-01-02T03:04:05.678Z')

/** Every field of every row set, none to its default, so that no position goes unseen. */
const ROWS: SnapshotRows = {
  apps: [
    {
      appKey: 'crm',
      name: 'CRM',
      description: 'Customers',
      homeUrl: '/crm',
      defaultLocale: 'en',
      revision: '42',
    },
  ],
  branding: [
    {
      appKey: 'crm',
      productName: 'Acme',
      logoUrl: 'https://cdn.example.com/logo.svg',
      faviconUrl: 'https://cdn.example.com/favicon.ico',
      primaryColor: '#112233',
      accentColor: '#445566',
      footerText: '© Acme',
      theme: { radius: '4px' },
    },
  ],
  menuItems: [
    {
      id: '1',
      appKey: 'crm',
      itemKey: 'leads',
      zone: 'sidebar',
      parentId: null,
      position: 0,
      kind: 'link',
      label: 'Leads',
      icon: 'users',
      href: '/crm/leads',
      external: false,
      rolloutPercent: 50,
      visibleFrom: 1_700_000_000_000,
      visibleUntil: 1_900_000_000_000,
    },
    {
      id: '2',
      appKey: 'crm',
      itemKey: 'docs',
      zone: 'sidebar',
      parentId: '1',
      position: 1,
      kind: 'link',
      label: 'Docs',
      icon: null,
      href: 'https://docs.example.com/',
      external: true,
      rolloutPercent: null,
      visibleFrom: null,
      visibleUntil: null,
    },
  ],
  grants: [{ menuItemId: '1', role: 'crm-sales' }],
  labels: [{ menuItemId: '1', locale: 'de', label: 'Interessenten' }],
}

/** The file's bytes before its checksum line, as this version writes them. */
function layoutOf(): Buffer {
  const snapshot = buildSnapshot(ROWS, { loadedAt: LOADED_AT, dataset: 'dataset-1', now: 0 })
  const records = recordsOf(snapshot)
  const body = snapshot.appKeys.flatMap((appKey) => {
    const record = records.get(appKey)
    return record === undefined ? [] : encodeRecordLine(record)
  })
  const header = encodeJsonLine({
    format: FILE_FORMAT,
    version: FILE_FORMAT_VERSION,
    service: '1.0.0',
    migrations: ['001_schema.sql aaaa'],
    dataset: 'dataset-1',
    history: '7300000000000000001/2',
    loadedAt: LOADED_AT.toISOString(),
    apps: snapshot.appKeys.length,
    bytes: body.reduce((sum, part) => sum + part.length, 0),
  })
  const confirmation = encodeJsonLine({ confirmedAt: LOADED_AT.toISOString() })
  return Buffer.concat([header, ...body, confirmation])
}

t.test('the layout is the one pinned for this format version', async (t) => {
  const layout = layoutOf()
  const digest = createHash('sha256').update(layout).digest('hex')
  t.equal(
    digest,
    PINNED_LAYOUTS[FILE_FORMAT_VERSION],
    `the bytes written under version ${FILE_FORMAT_VERSION} changed: a file of an earlier ` +
      'service would be read with the new layout. Move FILE_FORMAT_VERSION (file-format.ts) and ' +
      `pin the new bytes here (${digest}): ${layout.toString()}`,
  )
})

t.test('each version pinned once, the current one last', async (t) => {
  const versions = Object.keys(PINNED_LAYOUTS).map(Number)
  t.equal(Math.max(...versions), FILE_FORMAT_VERSION)
  t.equal(new Set(Object.values(PINNED_LAYOUTS)).size, versions.length, 'no two alike')
})
