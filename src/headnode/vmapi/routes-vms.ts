/**
 * VMAPI's VM routes (sdc-vmapi lib/endpoints/vms.js mount()): ListVms, GetVm (with
 * `?sync=true`), CreateVm, UpdateVm's actions, DeleteVm, and vm-agent's PutVm / PutVms.
 * Every action answers `202 {vm_uuid, job_uuid}` with a `workflow-api` header and runs as
 * a job (jobs.ts, workflows.ts).
 */
import { MockcloudError } from '../../common/errors.js';
import { HttpStatusError } from '../../common/http-client.js';
import { isUuid } from '../../common/uuid.js';
import { ok, params, query, route, type Params, type Req, type RestifyServer } from '../http.js';
import { jobResponse, loadVm, syncParam, type VmapiContext } from './context.js';
import {
  checkServerNicTags,
  cleanupNics,
  emptyFilteredNetworks,
  nicTagRequirements,
  provisionNics,
  resolveNetworks,
  serverNicTags,
  type FilteredNetworks,
} from './networking.js';
import { relay, type Obj } from './peers.js';
import { translateVm, type VmObject } from './translate.js';
import {
  fieldErr,
  parseListParams,
  setDefaultValues,
  validateCreateParams,
  validateUpdateParams,
  validationFailed,
  validNetworks,
} from './validation.js';
import { refreshFromCn, storeVm } from './workflows.js';
import type { FieldError } from '../../common/errors.js';

const VALID_VM_ACTIONS = [
  'start', 'stop', 'kill', 'reboot', 'reprovision', 'update', 'add_nics', 'update_nics', 'remove_nics',
  'create_snapshot', 'rollback_snapshot', 'delete_snapshot', 'create_disk', 'resize_disk', 'delete_disk', 'migrate',
];

const VALID_SIGNALS = new Set<unknown>([
  'SIGABRT', 'SIGALRM', 'SIGBUS', 'SIGCHLD', 'SIGCONT', 'SIGFPE', 'SIGHUP', 'SIGILL', 'SIGINT', 'SIGIO', 'SIGIOT',
  'SIGKILL', 'SIGLOST', 'SIGPIPE', 'SIGPOLL', 'SIGPROF', 'SIGPWR', 'SIGQUIT', 'SIGSEGV', 'SIGSTOP', 'SIGSYS', 'SIGTERM',
  'SIGTRAP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG', 'SIGUSR1', 'SIGUSR2', 'SIGVTALRM', 'SIGWINCH', 'SIGXCPU',
  'SIGXFSZ', 'ABRT', 'ALRM', 'BUS', 'CHLD', 'CONT', 'FPE', 'HUP', 'ILL', 'INT', 'IO', 'IOT', 'KILL', 'LOST', 'PIPE',
  'POLL', 'PROF', 'PWR', 'QUIT', 'SEGV', 'STOP', 'SYS', 'TERM', 'TRAP', 'TSTP', 'TTIN', 'TTOU', 'URG', 'USR1', 'USR2',
  'VTALRM', 'WINCH', 'XCPU', 'XFSZ',
  ...Array.from({ length: 32 }, (_, i) => i), 37,
]);

/** `renderVms`: only the requested fields ('*' = all) when `fields` is given. */
function render(vm: VmObject, fields: string[] | undefined): Obj {
  if (!fields) return vm;
  if (fields.includes('*')) return vm;
  const out: Obj = {};
  for (const f of fields) out[f] = vm[f];
  return out;
}

/** `setContext`: the caller's `x-context` header, kept in the job params. */
function withContext(req: Req, p: Params): Params {
  const raw = req.headers['x-context'];
  if (typeof raw === 'string') {
    try {
      p.context = JSON.parse(raw);
    } catch {
      // VMAPI ignores a malformed context
    }
  }
  return p;
}

/** Params every action job carries. */
function baseJobParams(req: Req, vm: VmObject, task: string, target: string, rp: Params): Params {
  const p: Params = {
    task,
    target: `/${target}-${vm.uuid}`,
    vm_uuid: vm.uuid,
    owner_uuid: vm.owner_uuid,
    server_uuid: vm.server_uuid,
    'x-request-id': req.getId(),
  };
  withContext(req, p);
  if (rp.creator_uuid !== undefined) p.creator_uuid = rp.creator_uuid;
  if (rp.origin !== undefined) p.origin = rp.origin;
  return p;
}

function idempotent(rp: Params): void {
  if (rp.idempotent) {
    if (rp.idempotent === true || rp.idempotent === 'true') rp.idempotent = true;
    else throw validationFailed('Invalid Parameters', [fieldErr.invalid('idempotent')]);
  }
}

/** `canSnapshot`. */
function checkCanSnapshot(vm: VmObject): void {
  if (!['joyent', 'joyent-minimal', 'lx', 'bhyve'].includes(String(vm.brand))) {
    throw new MockcloudError('Conflict', `snapshots are not supported for VMs of brand "${String(vm.brand)}"`, {
      restCode: 'BrandNotSupported',
    });
  }
  if (Array.isArray(vm.datasets) && vm.datasets.length > 0) {
    throw new MockcloudError('Conflict', 'snapshots are not supported for VMs with delegated datasets', {
      restCode: 'BrandNotSupported',
    });
  }
}

/** The default snapshot name: local time as YYYYMMDDTHHMMSSZ (VMAPI's formatTimestamp). */
function snapshotTimestamp(d = new Date()): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p2(d.getMonth() + 1)}${p2(d.getDate())}T${p2(d.getHours())}${p2(d.getMinutes())}${p2(d.getSeconds())}Z`;
}

export function mountVmRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;

  const listVms = route(log, async (req) => {
    const { filter, offset, limit, fields } = parseListParams(query(req));
    const { vms, count } = ctx.vms.list(filter, offset, limit);
    return { status: 200, body: vms.map((v) => render(v, fields)), headers: { 'x-joyent-resource-count': String(count) } };
  });
  server.get({ path: '/vms', name: 'ListVms' }, listVms);
  server.head({ path: '/vms', name: 'HeadVms' }, listVms);

  const getVm = route(log, async (req) => {
    const p = params(req);
    let vm = loadVm(ctx, p.uuid, p.owner_uuid);
    if (p.sync === 'true' && typeof vm.server_uuid === 'string' && vm.server_uuid) {
      try {
        await refreshFromCn(ctx.env, vm.server_uuid, vm.uuid, req.getId());
      } catch (err) {
        throw relay(err);
      }
      vm = ctx.vms.get(vm.uuid)!;
    }
    const fields = typeof p.fields === 'string' ? p.fields.split(',') : undefined;
    return ok(render(vm, fields));
  });
  server.get({ path: '/vms/:uuid', name: 'GetVm' }, getVm);
  server.head({ path: '/vms/:uuid', name: 'HeadVm' }, getVm);

  server.post(
    { path: '/vms', name: 'CreateVm' },
    route(log, async (req) => createVm(ctx, req)),
  );

  server.del(
    { path: '/vms/:uuid', name: 'DeleteVm' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      const sync = syncParam(p.sync);
      if (vm.server_uuid === undefined || vm.server_uuid === null) {
        throw new MockcloudError('Conflict', 'Cannot delete a VM with no server_uuid');
      }
      const jp = baseJobParams(req, vm, 'destroy', 'destroy', p);
      jp.current_state = vm.state;
      jp.currentVm = vm;
      const job = ctx.jobs.create(ctx.workflows.destroy!, jp);
      return jobResponse(ctx, vm.uuid, job, sync);
    }),
  );

  server.post(
    { path: '/vms/:uuid', name: 'UpdateVm' },
    route(log, async (req) => updateVm(ctx, req)),
  );

  server.put(
    { path: '/vms/:uuid', name: 'PutVm' },
    route(log, async (req) => {
      const p = params(req);
      if (!isUuid(p.uuid)) throw validationFailed('Invalid Parameters', [fieldErr.uuid('uuid')]);
      const vm = translateVm(p as Obj & { uuid: string }, false);
      storeVm(ctx.env, vm);
      await ctx.saveVms();
      return ok(translateVm(ctx.vms.getRaw(vm.uuid) ?? vm, false));
    }),
  );

  server.put(
    { path: '/vms', name: 'PutVms' },
    route(log, async (req) => {
      const q = query(req);
      const p = params(req);
      if (!q.server_uuid) throw validationFailed('Invalid Parameters', [fieldErr.missing('server_uuid')]);
      if (!isUuid(q.server_uuid)) throw validationFailed('Invalid Parameters', [fieldErr.uuid('server_uuid')]);
      const vms = p.vms;
      if (!vms) throw validationFailed('Invalid Parameters', [fieldErr.missing('vms')]);
      if (typeof vms !== 'object' || Array.isArray(vms)) throw validationFailed('Invalid Parameters', [fieldErr.invalid('vms')]);
      for (const [uuid, v] of Object.entries(vms as Record<string, Obj>)) {
        if (!isUuid(uuid) || !v || typeof v !== 'object') continue;
        ctx.vms.put(translateVm({ ...v, uuid }, false));
      }
      await ctx.saveVms();
      return { status: 200 };
    }),
  );
}

/** POST /vms. */
async function createVm(ctx: VmapiContext, req: Req) {
  const reqId = req.getId();
  const p: Params = { ...params(req) };
  delete p.sync;
  const sync = syncParam(params(req).sync);

  // Synchronous field validation first (VMAPI asserts owner_uuid before it even looks).
  const errs: FieldError[] = validateCreateParams(p);
  if (p.uuid !== undefined && isUuid(p.uuid) && ctx.vms.getRaw(p.uuid)) errs.push(fieldErr.duplicate('uuid'));
  if (typeof p.alias === 'string' && isUuid(p.owner_uuid)) {
    const same = ctx.vms.list({ owner_uuid: p.owner_uuid, alias: p.alias, aliasExact: true, state: 'active' });
    if (same.count > 0) errs.push(fieldErr.duplicate('alias', 'Already exists for this owner_uuid'));
  }
  let explicitServer: Obj | undefined;
  if (typeof p.server_uuid === 'string' && isUuid(p.server_uuid)) {
    try {
      explicitServer = await ctx.peers.getServer(p.server_uuid, reqId);
    } catch (err) {
      if (err instanceof HttpStatusError && err.statusCode === 404) {
        errs.push({ field: 'server_uuid', code: 'Invalid', message: (err.body as { message?: string })?.message ?? err.message });
      } else throw relay(err);
    }
  }
  const imageUuid =
    p.brand === 'bhyve' || p.brand === 'kvm' ? ((p.disks as Obj[] | undefined)?.[0]?.image_uuid as unknown) : p.image_uuid;
  let image: Obj | undefined;
  if (isUuid(imageUuid)) {
    try {
      image = await ctx.peers.getImage(imageUuid, reqId);
    } catch (err) {
      throw relay(err);
    }
    if (!image) errs.push({ field: 'image_uuid', code: 'Invalid', message: `image ${imageUuid} not found` });
    else if (image.state !== 'active' || image.disabled !== false) {
      errs.push({ field: 'image_uuid', code: 'Invalid', message: 'Image must be active and not disabled' });
    } else if (p.brand === 'lx') {
      if (!['lx-dataset', 'docker', 'lxd'].includes(String(image.type))) {
        errs.push(fieldErr.invalid('image_uuid', `Image type is "${String(image.type)}" must be one of: ["lx-dataset","docker"]`));
      }
      const kv = (image.tags as Obj | undefined)?.kernel_version;
      if (p.kernel_version === undefined) {
        if (kv) p.kernel_version = kv;
        else errs.push(fieldErr.missing('kernel_version', 'Required for LX zones'));
      }
    }
  }
  if (errs.length) throw validationFailed('Invalid VM parameters', errs);
  p.image = image;
  setDefaultValues(p, image);
  const vmUuid = String(p.uuid);

  // Stash affinity/locality/encrypted in internal_metadata, as VMAPI does.
  if (p.affinity || p.locality || p.encrypted) {
    const md = { ...((p.internal_metadata as Obj) ?? {}) };
    if (p.affinity) md.affinity = JSON.stringify(p.affinity);
    if (p.locality) md.locality = JSON.stringify(p.locality);
    if (p.encrypted) md.encrypted = true;
    p.internal_metadata = md;
  }

  const filtered: FilteredNetworks = await resolveNetworks(ctx.peers, p.networks as Obj[], reqId);
  const reqs = nicTagRequirements(filtered);

  // allocateServer: DAPI (CNAPI /allocate) unless the caller chose the server.
  let serverInfo: Obj;
  if (explicitServer) {
    serverInfo = explicitServer;
  } else {
    try {
      const vmForDapi: Params = { ...p, vm_uuid: vmUuid };
      delete vmForDapi.image;
      const res = await ctx.peers.allocate(
        { vm: vmForDapi, image, package: p.package, nic_tags: reqs.map((r) => r[0]), nic_tag_requirements: reqs },
        reqId,
      );
      serverInfo = res.server;
    } catch (err) {
      throw relay(err);
    }
  }
  const serverUuid = String(serverInfo.uuid);
  p.server_uuid = serverUuid;

  if (!p.do_not_inventory) {
    ctx.vms.put({ ...stripForStore(p), uuid: vmUuid, state: 'provisioning', create_timestamp: new Date().toISOString(), server_uuid: serverUuid });
    await ctx.saveVms();
  }

  const serverTags = serverNicTags(serverInfo);
  try {
    checkServerNicTags(serverTags, reqs);
    await provisionNics(
      ctx.peers,
      filtered,
      { ownerUuid: String(p.owner_uuid), vmUuid, serverUuid, serverTags },
      reqId,
    );
  } catch (err) {
    await cleanupNics(ctx.peers, filtered.nics, reqId);
    const cur = ctx.vms.getRaw(vmUuid);
    if (cur) {
      ctx.vms.put({ ...cur, state: 'failed', zone_state: 'failed' });
      await ctx.saveVms();
    }
    throw err;
  }

  // createProvisionJob
  const jp: Params = { ...p };
  jp.task = 'provision';
  jp.target = `/provision-${vmUuid}`;
  jp.vm_uuid = vmUuid;
  jp.current_state = 'provisioning';
  jp['x-request-id'] = reqId;
  delete jp.uuid;
  jp.filteredNetworks = filtered;
  jp.nics = filtered.nics;
  jp.server_uuid = serverUuid;
  withContext(req, jp);
  const job = ctx.jobs.create(ctx.workflows.provision!, jp);
  return jobResponse(ctx, vmUuid, job, sync);
}

/** What of the provision params goes into the `provisioning` VM record. */
function stripForStore(p: Params): Params {
  const out = { ...p };
  for (const k of ['networks', 'image', 'package', 'sync', 'affinity', 'locality', 'encrypted']) delete out[k];
  return out;
}

/** POST /vms/:uuid?action=... */
async function updateVm(ctx: VmapiContext, req: Req) {
  const rp = params(req);
  const vm = loadVm(ctx, rp.uuid, rp.owner_uuid);
  const action = rp.action;
  if (!action) throw validationFailed('Invalid Parameters', [fieldErr.missing('action')]);
  if (typeof action !== 'string' || !VALID_VM_ACTIONS.includes(action)) {
    throw validationFailed('Invalid Parameters', [fieldErr.invalid('action')]);
  }
  const sync = syncParam(rp.sync);
  if (vm.state === 'provisioning') {
    throw new MockcloudError('Conflict', `Cannot call ${action} for a VM that has not been provisioned yet`, {
      restCode: 'UnallocatedVM',
    });
  }
  const reqId = req.getId();
  const wf = ctx.workflows;
  let job;
  switch (action) {
    case 'start':
    case 'stop':
    case 'reboot': {
      idempotent(rp);
      const jp = baseJobParams(req, vm, action, action, rp);
      jp.current_state = vm.state;
      if ((action === 'stop' || action === 'reboot') && rp.timeout !== undefined) jp.timeout = rp.timeout;
      if ((action === 'start' || action === 'reboot') && rp.update !== undefined) jp.update = rp.update;
      if (rp.idempotent) jp.idempotent = rp.idempotent;
      job = ctx.jobs.create(wf[action]!, jp);
      break;
    }
    case 'kill': {
      if (rp.signal && !VALID_SIGNALS.has(rp.signal) && !VALID_SIGNALS.has(Number(rp.signal))) {
        throw validationFailed('Invalid Parameters', [fieldErr.invalid('signal')]);
      }
      idempotent(rp);
      const jp = baseJobParams(req, vm, 'kill', 'kill', rp);
      if (rp.signal) jp.signal = rp.signal;
      if (rp.idempotent) jp.idempotent = rp.idempotent;
      job = ctx.jobs.create(wf.kill!, jp);
      break;
    }
    case 'reprovision': {
      if (!['joyent', 'joyent-minimal', 'lx'].includes(String(vm.brand))) {
        throw new MockcloudError('Conflict', "VM 'brand' does not support reprovision", { restCode: 'BrandNotSupported' });
      }
      if (!rp.image_uuid) throw validationFailed('Invalid Parameters', [fieldErr.missing('image_uuid')]);
      if (!isUuid(rp.image_uuid)) throw validationFailed('Invalid Parameters', [fieldErr.uuid('image_uuid')]);
      const jp = baseJobParams(req, vm, 'reprovision', 'reprovision', rp);
      jp.image_uuid = rp.image_uuid;
      job = ctx.jobs.create(wf.reprovision!, jp);
      break;
    }
    case 'update': {
      const payload = validateUpdateParams(vm, rp);
      if (payload.tmpfs === undefined && vm.tmpfs === 0) payload.tmpfs = 0;
      const subtask = payload.subtask;
      delete payload.subtask;
      delete payload.package;
      const jp = baseJobParams(req, vm, 'update', 'update', rp);
      Object.assign(jp, {
        payload,
        subtask,
        image_uuid: vm.image_uuid,
        vm_brand: vm.brand,
        last_modified: vm.last_modified,
      });
      if (subtask === 'resize') {
        jp.current_ram = vm.ram ?? vm.max_physical_memory;
        jp.current_quota = vm.quota;
        if (rp.force === true || rp.force === 'true') jp.force = true;
      }
      job = ctx.jobs.create(wf.update!, jp);
      break;
    }
    case 'add_nics':
      job = await addNicsJob(ctx, req, vm, rp, reqId);
      break;
    case 'remove_nics': {
      let macs = rp.macs;
      if (!macs) throw validationFailed('Invalid VM update parameters', [fieldErr.missing('macs')]);
      if (typeof macs === 'string') macs = macs.split(',');
      if (!Array.isArray(macs) || !macs.every((m) => typeof m === 'string')) {
        throw validationFailed('Invalid VM update parameters', [fieldErr.invalid('macs', 'Invalid MAC addresses object')]);
      }
      const jp = baseJobParams(req, vm, 'remove_nics', 'remove-nics', rp);
      const im = vm.internal_metadata as Obj | undefined;
      Object.assign(jp, {
        remove_nics: macs,
        last_modified: vm.last_modified,
        wantResolvers: !(im && im.set_resolvers === false),
        oldMacs: ((vm.nics ?? []) as Obj[]).map((n) => n.mac),
      });
      job = ctx.jobs.create(wf.remove_nics!, jp);
      break;
    }
    case 'create_snapshot': {
      checkCanSnapshot(vm);
      const jp = baseJobParams(req, vm, 'snapshot', 'snapshot', rp);
      jp.snapshot_name = rp.snapshot_name || snapshotTimestamp();
      job = ctx.jobs.create(wf.snapshot!, jp);
      break;
    }
    case 'rollback_snapshot':
    case 'delete_snapshot': {
      checkCanSnapshot(vm);
      if (!rp.snapshot_name) throw validationFailed('Invalid Parameters', [fieldErr.missing('snapshot_name')]);
      const target = action === 'rollback_snapshot' ? 'rollback' : 'delete-snapshot';
      const jp = baseJobParams(req, vm, 'snapshot', target, rp);
      jp.snapshot_name = rp.snapshot_name;
      jp.vm_state = vm.state;
      job = ctx.jobs.create(action === 'rollback_snapshot' ? wf.rollback! : wf.delete_snapshot!, jp);
      break;
    }
    default:
      throw new MockcloudError('NotImplemented', `action ${action} is not supported by the dev headnode's VMAPI`);
  }
  return jobResponse(ctx, vm.uuid, job, sync);
}

/** add_nics: networks resolved and NICs provisioned now; the job puts them on the VM. */
async function addNicsJob(ctx: VmapiContext, req: Req, vm: VmObject, rp: Params, reqId: string) {
  const filtered = emptyFilteredNetworks();
  const addNics: Obj[] = [];
  if (rp.macs !== undefined) {
    const macs = typeof rp.macs === 'string' ? rp.macs.split(',') : rp.macs;
    if (!Array.isArray(macs)) throw validationFailed('Invalid VM update parameters', [fieldErr.invalid('macs')]);
    for (const mac of macs) {
      try {
        addNics.push(await ctx.peers.getNic(String(mac), reqId));
      } catch (err) {
        throw relay(err);
      }
    }
  } else {
    if (!rp.networks) {
      throw validationFailed('Invalid Parameters', [fieldErr.missing('missing networks or macs')]);
    }
    let nets: Obj[];
    try {
      nets = validNetworks(rp.networks, false);
    } catch (e) {
      throw validationFailed('Invalid network parameters', [fieldErr.invalid('networks', (e as Error).message)]);
    }
    Object.assign(filtered, await resolveNetworks(ctx.peers, nets, reqId));
    let server: Obj;
    try {
      server = await ctx.peers.getServer(String(vm.server_uuid), reqId);
    } catch (err) {
      throw relay(err);
    }
    const tags = serverNicTags(server);
    try {
      checkServerNicTags(tags, nicTagRequirements(filtered));
      await provisionNics(
        ctx.peers,
        filtered,
        { ownerUuid: String(vm.owner_uuid), vmUuid: vm.uuid, serverUuid: String(vm.server_uuid), serverTags: tags },
        reqId,
      );
    } catch (err) {
      await cleanupNics(ctx.peers, filtered.nics, reqId);
      throw err;
    }
    addNics.push(...filtered.nics);
  }
  const jp = baseJobParams(req, vm, 'add_nics', 'add-nics', rp);
  const im = vm.internal_metadata as Obj | undefined;
  Object.assign(jp, {
    last_modified: vm.last_modified,
    oldResolvers: vm.resolvers,
    wantResolvers: !(im && (im.set_resolvers === false || im.custom_resolvers)),
    filteredNetworks: filtered,
    fabricNatNics: [],
    add_nics: addNics,
  });
  return ctx.jobs.create(ctx.workflows.add_nics!, jp);
}
