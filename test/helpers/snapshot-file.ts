import { createHash } from 'node:crypto'

/** A file's four parts: the header line, the content lines, the confirmation line, the checksum's. */
export function splitFile(file: Buffer) {
  const headerEnd = file.indexOf(10) + 1
  const header = JSON.parse(file.subarray(0, headerEnd).toString()) as { bytes: number }
  const bodyEnd = headerEnd + header.bytes
  return {
    header: file.subarray(0, headerEnd),
    body: file.subarray(headerEnd, bodyEnd),
    confirmation: file.subarray(bodyEnd, file.length - 44),
    checksum: file.subarray(file.length - 44),
  }
}

/** A file of these parts with a checksum that matches them: what only a wrong writer makes. */
export function sealed(header: object, body: Buffer, confirmation: object): Buffer {
  const before = Buffer.concat([
    Buffer.from(`${JSON.stringify(header)}\n`),
    body,
    Buffer.from(`${JSON.stringify(confirmation)}\n`),
  ])
  const checksum = createHash('sha256').update(before).digest('base64url')
  return Buffer.concat([before, Buffer.from(`${checksum}\n`)])
}
