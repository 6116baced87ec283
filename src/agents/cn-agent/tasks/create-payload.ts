/**
 * The vmadm create payload machine_create builds from CNAPI's params.
 *
 * The mapping follows the real dummy task (a whitelist of top-level keys, NAPI's bookkeeping
 * stripped from NICs) without its losses: NICs keep `gateway`, `gateways`, `ips` and every
 * other vmadm NIC property, `firewall_enabled` and `zfs_io_priority` are kept, a missing
 * `nics` is `[]` (the dummy's `{}` crashed vmadm). Keys vmadm does not take for the brand
 * (e.g. `vcpus` on a zone) are dropped and logged, as the dummy logged ignored keys.
 */
import { DISK_PROPERTIES, NIC_PROPERTIES, PROPERTIES, brandIn } from '../../../vmadm/properties.js';
import type { TaskParams } from '../types.js';

/** Top-level keys a create payload carries to vmadm (the dummy's list plus its losses). */
const VM_PAYLOAD_KEYS = new Set([
  'alias',
  'archive_on_delete',
  'autoboot',
  'billing_id',
  'bootrom',
  'brand',
  'cpu_cap',
  'cpu_shares',
  'cpu_type',
  'customer_metadata',
  'delegate_dataset',
  'disk_driver',
  'disks',
  'dns_domain',
  'do_not_inventory',
  'firewall_enabled',
  'flexible_disk_size',
  'hostname',
  'image_uuid',
  'indestructible_delegated',
  'indestructible_zoneroot',
  'internal_metadata',
  'internal_metadata_namespaces',
  'kernel_version',
  'limit_priv',
  'maintain_resolvers',
  'max_locked_memory',
  'max_lwps',
  'max_physical_memory',
  'max_swap',
  'nic_driver',
  'nics',
  'owner_uuid',
  'package_name',
  'package_version',
  'quota',
  'ram',
  'resolvers',
  'routes',
  'server_uuid',
  'tags',
  'tmpfs',
  'uuid',
  'vcpus',
  'zfs_io_priority',
  'zpool',
]);

export interface CreateParams {
  uuid: string;
  brand: string;
  imageUuid: string | undefined;
}

function mapThings(things: unknown[], keep: Readonly<Record<string, unknown>>, name: string, ignored: string[]): Record<string, unknown>[] {
  return things.map((thing, i) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(thing as Record<string, unknown>)) {
      if (Object.prototype.hasOwnProperty.call(keep, k)) out[k] = v;
      else ignored.push(`${name}.${i}.${k}`);
    }
    return out;
  });
}

/** The vmadm create payload built from CNAPI's params. */
export function mapCreatePayload(params: TaskParams, brand: string, ignored: string[]): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (key === 'nics') {
      payload.nics = Array.isArray(value) ? mapThings(value, NIC_PROPERTIES, 'nic', ignored) : [];
    } else if (key === 'disks' && brandIn(PROPERTIES.disks?.create, brand)) {
      payload.disks = Array.isArray(value) ? mapThings(value, DISK_PROPERTIES, 'disk', ignored) : [];
    } else if (!VM_PAYLOAD_KEYS.has(key)) {
      ignored.push(key);
    } else if (!brandIn(PROPERTIES[key]?.create, brand) && key !== 'uuid' && key !== 'brand' && key !== 'server_uuid') {
      ignored.push(key); // e.g. vcpus on a zone: vmadm would refuse the payload
    } else {
      payload[key] = value;
    }
  }
  payload.nics ??= [];
  payload.autoboot ??= true;
  return payload;
}
