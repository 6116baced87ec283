/**
 * machine_create and machine_reprovision: the stepped tasks, with the real event sequence
 * (`start:pre_check` … `end:create_machine` and progress 20/30/50/60/100).
 *
 * The payload mapping follows the real dummy task (a whitelist of top-level keys, NAPI's
 * bookkeeping stripped from NICs) without its losses: NICs keep `gateway`, `gateways`, `ips`
 * and every other vmadm NIC property, `firewall_enabled` and `zfs_io_priority` are kept, a
 * missing `nics` is `[]` (the dummy's `{}` crashed vmadm). Keys vmadm does not take for the
 * brand (e.g. `vcpus` on a zone) are dropped and logged, as the dummy logged ignored keys.
 */
import { DISK_PROPERTIES, NIC_PROPERTIES, PROPERTIES, brandIn } from '../../../vmadm/properties.js';
import type { Vm } from '../../../vmadm/types.js';
import { defineTask, TaskError, type TaskContext, type TaskParams } from '../types.js';
import { markImageInstalled } from './images.js';
import { invalid, isPlainObject, optStringParam, uuidParam } from './params.js';
import { loadVm, messageOf, restCodeOf, vmadmCall } from './vm-common.js';

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

function validateCreate(p: TaskParams): CreateParams {
  const uuid = uuidParam(p, 'uuid');
  const brand = optStringParam(p, 'brand') ?? 'joyent';
  if (p.nics !== undefined && !Array.isArray(p.nics) && !(isPlainObject(p.nics) && Object.keys(p.nics).length === 0)) {
    throw invalid('params.nics must be an array');
  }
  if (Array.isArray(p.nics) && !p.nics.every(isPlainObject)) throw invalid('params.nics must be an array of objects');
  if (p.disks !== undefined && !Array.isArray(p.disks) && !(isPlainObject(p.disks) && Object.keys(p.disks).length === 0)) {
    throw invalid('params.disks must be an array');
  }
  if (Array.isArray(p.disks) && !p.disks.every(isPlainObject)) throw invalid('params.disks must be an array of objects');
  return { uuid, brand, imageUuid: imageOfPayload(p) };
}

/** The image a create payload boots from: `image_uuid`, or the boot disk's for HVM. */
function imageOfPayload(p: TaskParams): string | undefined {
  if (typeof p.image_uuid === 'string') return p.image_uuid.toLowerCase();
  if (Array.isArray(p.disks)) {
    const d = p.disks.find((x) => isPlainObject(x) && typeof x.image_uuid === 'string') as { image_uuid?: string } | undefined;
    return d?.image_uuid?.toLowerCase();
  }
  return undefined;
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

export const machineCreate = defineTask<CreateParams>({
  name: 'machine_create',
  queue: 'machine_creation',
  changesVms: true,
  validate: validateCreate,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = ctx.cn.vms;
    let failure: unknown;
    try {
      await ctx.step('pre_check', 'Performing pre-flight sanity check', 20, async () => {
        if (await vms.exists(p.uuid, { include_dni: true })) throw new TaskError(`Machine ${p.uuid} exists.`);
      });
      await ctx.step('ensure_dataset_present', 'Checking for required image/dataset', 30, async () => {
        if (p.imageUuid) ctx.log.info('Checking whether image %s is installed', p.imageUuid);
      });
      await ctx.step('fetch_dataset', 'Fetching image/dataset', 50, async () => {
        // A mock CN holds no image data: the image counts as imported from here on.
        if (p.imageUuid) markImageInstalled(ctx, p.imageUuid);
        ctx.log.info('Dataset exists, not fetching');
      });
      const payload = await ctx.step('build_payload', 'Building VM payload', 60, async () => {
        const ignored: string[] = [];
        const built = mapCreatePayload(ctx.rawParams, p.brand, ignored);
        if (ignored.length > 0) ctx.log.warn({ ignored }, 'Warning: ignored some unrecognized payload properties');
        ctx.log.info({ payload: built }, 'Built payload');
        return built;
      });
      const vm = await ctx.step('create_machine', 'Creating machine', 100, () =>
        vms.create(payload as Parameters<typeof vms.create>[0]),
      );
      return { vm: await loadAfter(ctx, vm) };
    } catch (err) {
      failure = err;
    }
    // Like the real task: a VM that exists after a failed create is returned with the error.
    const existing = failure instanceof TaskError ? undefined : vms.get(p.uuid, { include_dni: true });
    if (failure instanceof TaskError) throw failure;
    const restCode = restCodeOf(failure);
    throw new TaskError(messageOf(failure), restCode ? { restCode } : undefined, existing ? { vm: existing } : undefined);
  },
});

async function loadAfter(ctx: TaskContext, created: Vm): Promise<Vm> {
  try {
    return await ctx.cn.vms.load(created.uuid, { include_dni: true });
  } catch {
    return created;
  }
}

export interface ReprovisionParams {
  uuid: string;
  imageUuid: string;
}

export const machineReprovision = defineTask<ReprovisionParams>({
  name: 'machine_reprovision',
  queue: 'machine_creation',
  changesVms: true,
  validate: (p) => {
    optStringParam(p, 'zfs_storage_pool_name');
    return { uuid: uuidParam(p, 'uuid'), imageUuid: uuidParam(p, 'image_uuid') };
  },
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await ctx.step('pre_check', 'Pre-flight sanity check', 20, async () => {
      if (!(await ctx.cn.vms.exists(p.uuid, { include_dni: true }))) {
        throw new TaskError(`VM ${p.uuid} does not exist.`);
      }
    });
    await ctx.step('ensure_dataset_present', 'Checking for zone template dataset', 30, async () => {
      markImageInstalled(ctx, p.imageUuid);
      ctx.log.info(`Dataset ${p.imageUuid} exists.`);
    });
    await ctx.step('reprovision_machine', 'Reprovisioning machine', 100, () =>
      vmadmCall('vmadm.reprovision', () => ctx.cn.vms.reprovision(p.uuid, { image_uuid: p.imageUuid })),
    );
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
