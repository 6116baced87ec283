/**
 * What vmadm adds to a payload that sets `docker: true` (SmartOS VM.js normalizePayload),
 * on create and on update: `docker` in internal_metadata_namespaces, `restart_init: false`,
 * the brand's dockerinit as `init_name`, and a 64-hex `docker:id` in internal_metadata
 * (the VM uuid and a second uuid, dashes removed), each only when the VM does not have it
 * yet. Runs before the brand filter, as in vmadm.
 */
import { newUuid } from '../common/uuid.js';
import { BRAND_FEATURES } from './properties.js';
import { isPlainObject } from './validate.js';

function wantsDocker(v: unknown): boolean {
  return v === true || v === 'true';
}

/** A docker id: the VM uuid and a fresh uuid, dashes removed (64 hex digits). */
export function newDockerId(vmUuid: string): string {
  return `${vmUuid}${newUuid()}`.replace(/-/g, '');
}

function asList(v: unknown): string[] | undefined {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string') return v.split(',').filter((x) => x.length > 0);
  return undefined;
}

/**
 * Add vmadm's docker settings to `payload` (changed in place). `vm` is the VM being updated
 * (undefined on create).
 */
export function applyDockerDefaults(
  payload: Record<string, unknown>,
  brand: string,
  uuid: string,
  vm: Readonly<Record<string, unknown>> | undefined,
): void {
  if (!wantsDocker(payload.docker)) return;

  const vmNamespaces = asList(vm?.internal_metadata_namespaces) ?? [];
  if (!vmNamespaces.includes('docker')) {
    const given = asList(payload.internal_metadata_namespaces);
    if (given === undefined) payload.internal_metadata_namespaces = ['docker'];
    else if (!given.includes('docker')) payload.internal_metadata_namespaces = [...given, 'docker'];
  }

  // zoneadmd must not restart a docker container's init (vmadm sets this unless asked not to).
  if (vm?.restart_init !== false && payload.restart_init !== false) payload.restart_init = false;

  const dockerinit = BRAND_FEATURES[brand]?.dockerinit;
  if (!vm?.init_name && !payload.init_name && dockerinit) payload.init_name = dockerinit;

  const mdataKey = vm ? 'set_internal_metadata' : 'internal_metadata';
  const vmMdata = vm?.internal_metadata;
  if (!(isPlainObject(vmMdata) && vmMdata['docker:id'])) {
    const cur = payload[mdataKey];
    if (!cur) payload[mdataKey] = { 'docker:id': newDockerId(uuid) };
    else if (isPlainObject(cur) && !cur['docker:id']) cur['docker:id'] = newDockerId(uuid);
  }
}
