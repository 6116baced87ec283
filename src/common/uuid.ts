import { randomUUID } from 'node:crypto';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}

export function newUuid(): string {
  return randomUUID();
}

/** The first 32 hex digits of `hex` in a UUID's five groups. */
export function uuidFromHex(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The name-based UUID Triton derives from a hex digest, as cn-agent's recovery_config and
 * CNAPI do for a "Zpool Recovery" digest (sdc-cnapi lib/endpoints/servers.js
 * repeatableUUIDFromHexString): the digest's first 16 bytes with the variant and version bits
 * set; '' for a digest shorter than that.
 */
export function repeatableUuidFromHex(hex: string): string {
  const buf = Buffer.from(hex, 'hex');
  if (buf.length < 16) return '';
  buf[8] = (buf[8]! & 0x3f) | 0xa0;
  buf[6] = (buf[6]! & 0x0f) | 0x50;
  return uuidFromHex(buf.toString('hex', 0, 16));
}
