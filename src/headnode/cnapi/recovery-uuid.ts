/**
 * The name-based UUID CNAPI derives from a sysinfo "Zpool Recovery" digest to compare it with
 * a `recovery_uuid` (sdc-cnapi lib/endpoints/servers.js repeatableUUIDFromHexString): the
 * digest's first 16 bytes with the variant and version bits set.
 */
export function repeatableUuid(hex: string): string {
  const buf = Buffer.from(hex, 'hex');
  if (buf.length < 16) return '';
  buf[8] = (buf[8]! & 0x3f) | 0xa0;
  buf[6] = (buf[6]! & 0x0f) | 0x50;
  const h = buf.toString('hex', 0, 16);
  return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20, 32)].join('-');
}
