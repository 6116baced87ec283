/**
 * UpdateVm, `POST /vms/:uuid?action=...` (sdc-vmapi lib/endpoints/vms.js `updateVm` and the
 * action handlers, lib/apis/wfapi.js `create*Job`): the action checked, then each action's own
 * checks and its job with the params VMAPI gives it. add_nics provisions the NICs in NAPI
 * before the job (and deletes them again if anything fails before the job is queued).
 */
import { params as reqParams, type Params, type Req } from '../http.js';
import { loadVm, respondWithJob, setContext, syncParam, type VmapiContext } from './context.js';
import { elem, validationFailed, validUUID, vmapiErrors } from './errors.js';
import type { JobRecord } from './jobs.js';
import { refuseMigration } from './migrate.js';
import {
  checkServerNicTags,
  checkServerNicTagsForMacs,
  cleanupNics,
  loadNicsByMac,
  nicTagRequirements,
  preFilterNetworks,
  provisionNetNics,
  serverNicTags,
  type FilteredNetworks,
} from './networking.js';
import { relay, type Obj } from './peers.js';
import type { VmObject } from './translate.js';
import { validateMacs, validateNics, validatePciSlot, validateUpdateParams } from './validation-update.js';

const VALID_VM_ACTIONS = [
  'start', 'stop', 'kill', 'reboot', 'reprovision', 'update', 'add_nics', 'update_nics', 'remove_nics',
  'create_snapshot', 'rollback_snapshot', 'delete_snapshot', 'create_disk', 'resize_disk', 'delete_disk', 'migrate',
];

/** The signals `kill` takes, compared as given (a number in a query string is a string, and refused). */
const VALID_SIGNALS: unknown[] = [
  'SIGABRT', 'SIGALRM', 'SIGBUS', 'SIGCHLD', 'SIGCONT', 'SIGFPE', 'SIGHUP', 'SIGILL', 'SIGINT', 'SIGIO', 'SIGIOT',
  'SIGKILL', 'SIGLOST', 'SIGPIPE', 'SIGPOLL', 'SIGPROF', 'SIGPWR', 'SIGQUIT', 'SIGSEGV', 'SIGSTOP', 'SIGSYS', 'SIGTERM',
  'SIGTRAP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG', 'SIGUSR1', 'SIGUSR2', 'SIGVTALRM', 'SIGWINCH', 'SIGXCPU',
  'SIGXFSZ', 'ABRT', 'ALRM', 'BUS', 'CHLD', 'CONT', 'FPE', 'HUP', 'ILL', 'INT', 'IO', 'IOT', 'KILL', 'LOST', 'PIPE',
  'POLL', 'PROF', 'PWR', 'QUIT', 'SEGV', 'STOP', 'SYS', 'TERM', 'TRAP', 'TSTP', 'TTIN', 'TTOU', 'URG', 'USR1', 'USR2',
  'VTALRM', 'WINCH', 'XCPU', 'XFSZ', ...Array.from({ length: 32 }, (_, i) => i), 37,
];

const MIN_BHYVE_SNAPSHOT_PLATFORM = '20181119T131511Z';

interface ActionReq {
  ctx: VmapiContext;
  req: Req;
  vm: VmObject;
  p: Params;
  filtered: FilteredNetworks;
}

/** The params every job of a VM carries (`createXJob`). */
function jobParams(a: ActionReq, task: string, target: string, extra: Params = {}): Params {
  const jp: Params = {
    ...extra,
    task,
    target: `/${target}-${a.vm.uuid}`,
    vm_uuid: a.vm.uuid,
    owner_uuid: a.vm.owner_uuid,
    server_uuid: a.vm.server_uuid,
    'x-request-id': a.req.getId(),
  };
  setContext(a.req, jp);
  if (a.p.creator_uuid !== undefined) jp.creator_uuid = a.p.creator_uuid;
  if (a.p.origin !== undefined) jp.origin = a.p.origin;
  return jp;
}

function idempotent(p: Params): void {
  if (!p.idempotent) return;
  if (p.idempotent === true || p.idempotent === 'true') p.idempotent = true;
  else throw validationFailed('Invalid Parameters', [elem.invalid('idempotent')]);
}

/** `canSnapshot`. */
function checkCanSnapshot(vm: VmObject): void {
  if (!['joyent', 'joyent-minimal', 'lx', 'bhyve'].includes(String(vm.brand))) {
    throw vmapiErrors.brandNotSupported(`snapshots are not supported for VMs of brand "${String(vm.brand)}"`);
  }
  if (Array.isArray(vm.datasets) && vm.datasets.length > 0) {
    throw vmapiErrors.brandNotSupported('snapshots are not supported for VMs with delegated datasets');
  }
  const im = (vm.internal_metadata ?? {}) as Obj;
  if (vm.docker && Object.prototype.hasOwnProperty.call(im, 'docker:volumesfrom')) {
    let from: unknown;
    try {
      from = JSON.parse(String(im['docker:volumesfrom']));
    } catch {
      throw vmapiErrors.brandNotSupported('snapshots are not supported for VMs with invalid docker --volumes-from');
    }
    if (!Array.isArray(from) || from.length > 0) {
      throw vmapiErrors.brandNotSupported('snapshots are not supported for docker VMs that use --volumes-from');
    }
  }
  if (vm.brand === 'bhyve' && String(vm.platform_buildstamp) < MIN_BHYVE_SNAPSHOT_PLATFORM) {
    throw vmapiErrors.brandNotSupported(
      `snapshots are not supported for bhyve VMs unless Platform Image is "${MIN_BHYVE_SNAPSHOT_PLATFORM}" or newest`,
    );
  }
}

/** The default snapshot name: local time as YYYYMMDDTHHMMSSZ (VMAPI's formatTimestamp). */
function snapshotTimestamp(d = new Date()): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p2(d.getMonth() + 1)}${p2(d.getDate())}T${p2(d.getHours())}${p2(d.getMinutes())}${p2(d.getSeconds())}Z`;
}

/** POST /vms/:uuid. */
export async function updateVm(ctx: VmapiContext, req: Req): Promise<{ status: number; body: unknown; headers: Record<string, string> }> {
  const p: Params = structuredClone(reqParams(req));
  const vm = loadVm(ctx, p.uuid, p.owner_uuid);
  if (p.action === 'migrate' && p.migration_action === 'begin' && Array.isArray(vm.nics)) {
    p.networks = (vm.nics as Obj[]).map((n) => ({ mac: n.mac, uuid: n.network_uuid, ...(n.primary ? { primary: n.primary } : {}) }));
  }
  const { filtered, networks } = await preFilterNetworks(ctx.peers, p.networks, p.owner_uuid || vm.owner_uuid, req.getId());
  if (networks) p.networks = networks;
  const action = p.action;
  if (!action) throw validationFailed('Invalid Parameters', [elem.missing('action')]);
  if (typeof action !== 'string' || !VALID_VM_ACTIONS.includes(action)) {
    throw validationFailed('Invalid Parameters', [elem.invalid('action')]);
  }
  const sync = syncParam(p.sync);
  if (vm.state === 'provisioning') {
    throw vmapiErrors.unallocated(`Cannot call ${action} for a VM that has not been provisioned yet`);
  }
  const a: ActionReq = { ctx, req, vm, p, filtered };
  const job = await runAction(a, action);
  return respondWithJob(ctx, vm.uuid, job, sync);
}

async function runAction(a: ActionReq, action: string): Promise<JobRecord> {
  const { ctx, vm, p } = a;
  const wf = ctx.workflows;
  switch (action) {
    case 'start':
    case 'stop':
    case 'reboot': {
      idempotent(p);
      const jp = jobParams(a, action, action, { current_state: vm.state });
      if (action !== 'start' && p.timeout !== undefined) jp.timeout = p.timeout;
      if (action !== 'stop' && p.update !== undefined) jp.update = p.update;
      if (p.idempotent) jp.idempotent = p.idempotent;
      return ctx.jobs.create(wf[action]!, jp);
    }
    case 'kill': {
      if (p.signal && !VALID_SIGNALS.includes(p.signal)) throw validationFailed('Invalid Parameters', [elem.invalid('signal')]);
      idempotent(p);
      const extra: Params = {};
      if (p.signal) extra.signal = p.signal;
      if (p.idempotent) extra.idempotent = p.idempotent;
      return ctx.jobs.create(wf.kill!, jobParams(a, 'kill', 'kill', extra));
    }
    case 'reprovision': {
      if (!['joyent', 'joyent-minimal', 'lx'].includes(String(vm.brand))) {
        throw vmapiErrors.brandNotSupported("VM 'brand' does not support reprovision");
      }
      if (!p.image_uuid) throw validationFailed('Invalid Parameters', [elem.missing('image_uuid')]);
      if (!validUUID(p.image_uuid)) throw validationFailed('Invalid Parameters', [elem.uuid('image_uuid')]);
      return ctx.jobs.create(wf.reprovision!, jobParams(a, 'reprovision', 'reprovision', { image_uuid: p.image_uuid }));
    }
    case 'update': {
      const payload = await validateUpdateParams({ vms: ctx.vms, peers: ctx.peers, reqId: a.req.getId() }, vm, p);
      if (payload.tmpfs === undefined && vm.tmpfs === 0) payload.tmpfs = 0;
      return updateJob(a, payload);
    }
    case 'add_nics':
      return addNics(a);
    case 'update_nics':
      validateNics(vm, p);
      return ctx.jobs.create(
        wf.update_nics!,
        jobParams(a, 'update_nics', 'update-nics', { update_nics: p.nics, last_modified: vm.last_modified }),
      );
    case 'remove_nics': {
      validateMacs(p);
      const im = vm.internal_metadata as Obj | undefined;
      return ctx.jobs.create(
        wf.remove_nics!,
        jobParams(a, 'remove_nics', 'remove-nics', {
          remove_nics: p.macs,
          last_modified: vm.last_modified,
          wantResolvers: !(im && typeof im === 'object' && im.set_resolvers === false),
          oldMacs: ((vm.nics ?? []) as Obj[]).map((n) => n.mac),
        }),
      );
    }
    case 'create_snapshot':
      checkCanSnapshot(vm);
      return ctx.jobs.create(wf.snapshot!, jobParams(a, 'snapshot', 'snapshot', { snapshot_name: p.snapshot_name || snapshotTimestamp() }));
    case 'rollback_snapshot':
    case 'delete_snapshot': {
      checkCanSnapshot(vm);
      if (!p.snapshot_name) throw validationFailed('Invalid Parameters', [elem.missing('snapshot_name')]);
      const rollback = action === 'rollback_snapshot';
      const jp = jobParams(a, 'snapshot', rollback ? 'rollback' : 'delete-snapshot', { snapshot_name: p.snapshot_name });
      jp.vm_state = vm.state;
      return ctx.jobs.create(rollback ? wf.rollback! : wf.delete_snapshot!, jp);
    }
    case 'create_disk':
      return createDisk(a);
    case 'resize_disk':
      return resizeDisk(a);
    case 'delete_disk':
      return deleteDisk(a);
    default:
      return refuseMigration(vm, p);
  }
}

/** `createUpdateJob`. */
function updateJob(a: ActionReq, payload: Params): JobRecord {
  const { vm, p } = a;
  const subtask = payload.subtask;
  delete payload.subtask;
  delete payload.package;
  const jp = jobParams(a, 'update', 'update', {
    payload,
    subtask,
    image_uuid: vm.image_uuid,
    vm_brand: vm.brand,
    last_modified: vm.last_modified,
  });
  if (subtask === 'resize') {
    jp.current_ram = vm.ram || vm.max_physical_memory;
    jp.current_quota = vm.quota;
    if (p.force === true || p.force === 'true') jp.force = true;
  }
  return a.ctx.jobs.create(a.ctx.workflows.update!, jp);
}

/** add_nics: NIC tags checked against the VM's server, NICs provisioned, then the job. */
async function addNics(a: ActionReq): Promise<JobRecord> {
  const { ctx, vm, p, filtered } = a;
  const reqId = a.req.getId();
  const addNicsList: Obj[] = [];
  try {
    let server: Obj;
    try {
      server = await ctx.peers.getServer(String(vm.server_uuid), reqId);
    } catch (err) {
      throw relay(err);
    }
    const tags = serverNicTags(server);
    if (p.macs) {
      await checkServerNicTagsForMacs(ctx.peers, (typeof p.macs === 'string' ? p.macs.split(',') : p.macs) as string[], tags, reqId);
      addNicsList.push(...(await loadNicsByMac(ctx.peers, p.macs, reqId)));
    } else {
      checkServerNicTags(tags, nicTagRequirements(filtered));
      if (filtered.networks.length === 0) {
        throw validationFailed('Invalid Parameters', [elem.missing('missing networks or macs')]);
      }
      await provisionNetNics(
        ctx.peers,
        filtered,
        { ownerUuid: String(p.owner_uuid || vm.owner_uuid), vmUuid: vm.uuid, serverUuid: String(vm.server_uuid), serverTags: tags },
        reqId,
      );
      addNicsList.push(...filtered.nics);
    }
  } catch (err) {
    await cleanupNics(ctx.peers, filtered.nics, reqId);
    throw err;
  }
  const im = vm.internal_metadata as Obj | undefined;
  const want = !(im && typeof im === 'object' && (im.set_resolvers === false || im.custom_resolvers));
  return ctx.jobs.create(
    ctx.workflows.add_nics!,
    jobParams(a, 'add_nics', 'add-nics', {
      last_modified: vm.last_modified,
      oldResolvers: vm.resolvers,
      wantResolvers: want,
      sdc_nat_pool: p.sdc_nat_pool,
      filteredNetworks: structuredClone(filtered),
      fabricNatNics: [],
      add_nics: addNicsList,
    }),
  );
}

const disksOf = (vm: VmObject): Obj[] => (Array.isArray(vm.disks) ? (vm.disks as Obj[]) : []);

/** `createDisk`. */
function createDisk(a: ActionReq): JobRecord {
  const { vm, p } = a;
  const disks = disksOf(vm);
  const diskUuid = p.disk_uuid;
  if (diskUuid !== undefined) {
    if (!validUUID(diskUuid)) throw validationFailed('Invalid disk_uuid', [elem.uuid('disk_uuid', `${String(diskUuid)} is not a UUID`)]);
    if (disks.some((d) => d.uuid === diskUuid)) throw validationFailed('Invalid Parameters', [elem.invalid('disk_uuid', 'Already in use')]);
  }
  if (p.pci_slot !== undefined) {
    validatePciSlot(p);
    if (disks.some((d) => d.pci_slot === p.pci_slot)) throw validationFailed('Invalid Parameters', [elem.invalid('pci_slot', 'Already in use')]);
  }
  let size: unknown = p.size;
  if (Number.isNaN(Number(size)) && size !== 'remaining') {
    throw validationFailed('Invalid Parameters', [elem.invalid('size', 'Not a valid value')]);
  }
  checkFlexibleDisk(vm, 'Can only create disks on bhyve VMs');
  const current = disks.reduce((acc, d) => acc + Number(d.size ?? 0), 0);
  size = size === 'remaining' ? Number(vm.flexible_disk_size) - current : Number(size);
  if (current + (size as number) > Number(vm.flexible_disk_size)) throw vmapiErrors.insufficientDisk();
  if ((size as number) <= 0) throw validationFailed('Invalid Parameters', [elem.invalid('size', 'Must be greater than zero')]);
  return updateJob(a, {
    subtask: 'create_disk',
    add_disks: [{ uuid: diskUuid, pci_slot: p.pci_slot, size, model: 'virtio' }],
  });
}

/** The brand, flexible-disk and stopped checks the disk actions share. */
function checkFlexibleDisk(vm: VmObject, brandMessage: string): void {
  if (vm.brand !== 'bhyve') throw vmapiErrors.brandNotSupported(brandMessage);
  if (!vm.flexible_disk_size) throw vmapiErrors.noFlexibleDisk();
  if (vm.state !== 'stopped') throw vmapiErrors.notStopped();
}

/** `resizeDisk`. */
function resizeDisk(a: ActionReq): JobRecord {
  const { vm, p } = a;
  const size = Number(p.size);
  const shrink = p.dangerous_allow_shrink;
  validatePciSlot(p);
  const found = disksOf(vm).find((d) => d.pci_slot === p.pci_slot);
  if (!found) throw vmapiErrors.notFound('Disk not found');
  if (Number.isNaN(size)) throw validationFailed('Invalid Parameters', [elem.invalid('size', 'Not a valid number')]);
  if (shrink !== undefined && typeof shrink !== 'boolean') {
    throw validationFailed('Invalid Parameters', [elem.invalid('dangerous_allow_shrink', 'Not a boolean')]);
  }
  checkFlexibleDisk(vm, 'Can only resize disks on bhyve VMs');
  if (Number(found.size) > size && !shrink) {
    throw validationFailed('Invalid Parameters', [elem.invalid('size', 'Reducing disk size is a dangerous operation')]);
  }
  const aggr = disksOf(vm).reduce((acc, d) => acc + Number(d.size ?? 0), 0);
  if (aggr - Number(found.size) + size > Number(vm.flexible_disk_size)) throw vmapiErrors.insufficientDisk();
  return updateJob(a, {
    subtask: 'resize_disk',
    update_disks: [{ path: found.path, size, dangerous_allow_shrink: shrink || false }],
  });
}

/** `deleteDisk`. */
function deleteDisk(a: ActionReq): JobRecord {
  const { vm, p } = a;
  validatePciSlot(p);
  const found = disksOf(vm).find((d) => d.pci_slot === p.pci_slot);
  if (!found) throw vmapiErrors.notFound('Disk not found');
  if (found.boot) throw validationFailed('Invalid Parameters', [elem.invalid('slot', 'Cannot remove boot disk')]);
  checkFlexibleDisk(vm, 'Can only delete disks on bhyve VMs');
  return updateJob(a, { subtask: 'delete_disk', remove_disks: [found.path] });
}
