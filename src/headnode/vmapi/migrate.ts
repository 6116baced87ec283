/**
 * `POST /vms/:uuid?action=migrate` up to where the dev headnode stops (sdc-vmapi
 * lib/vm-migration/migrate.js `migrateVm`): the migration action checked, the migration record
 * looked up (the dev DC never has one: only `begin` and `estimate` get past that), and
 * `validateMigrationBegin`'s checks in its order: the override UUIDs, a user's migration (not
 * allowed unless the VM's `internal_metadata.user_migration_allowed` says so; VMAPI's
 * `userMigrationAllowed` is off by default) and core instances (412, NAT zones aside). What
 * passes them is answered 501: moving a VM needs two CNs' datasets and `zfs send`.
 */
import type { Params } from '../http.js';
import { elem, validationFailed, validUUID, VmapiError } from './errors.js';
import type { VmObject } from './translate.js';

const VALID_MIGRATION_ACTIONS = ['abort', 'begin', 'estimate', 'finalize', 'pause', 'rollback', 'switch', 'sync'];

export function refuseMigration(vm: VmObject, p: Params): never {
  const action = p.migration_action;
  if (!action || !VALID_MIGRATION_ACTIONS.includes(String(action))) {
    throw new VmapiError('InvalidArgument', 'Invalid migration action');
  }
  // getVmMigrationByParams: no record, which only a new migration may lack.
  if (action !== 'begin' && action !== 'estimate') throw new VmapiError('ResourceNotFound', 'migration not found');
  for (const key of ['override_server_uuid', 'override_uuid']) {
    const v = p[key];
    if (v && !validUUID(v)) {
      throw validationFailed(`Invalid parameters: ${key} (${String(v)}) is not a valid UUID`, [elem.uuid(key)]);
    }
  }
  if (p.owner_uuid) {
    const im = (vm.internal_metadata ?? {}) as Record<string, unknown>;
    const allowed = Object.hasOwn(im, 'user_migration_allowed') ? im.user_migration_allowed === true : false;
    if (!allowed) throw new VmapiError('PreconditionFailed', 'User migration on this VM not allowed');
  }
  const tags = (vm.tags ?? {}) as Record<string, unknown>;
  if (tags.smartdc_type === 'core' && tags.smartdc_role !== 'nat') {
    throw new VmapiError('PreconditionFailed', 'Cannot migrate a core instance');
  }
  throw new VmapiError('NotImplemented', 'VM migration is not supported by the dev headnode');
}
