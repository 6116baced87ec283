/**
 * CreateVm (sdc-vmapi lib/endpoints/vms.js `preFilterNetworks`, `setPrimaryNic`, `createVm`,
 * `allocateServer`): networks resolved in NAPI, parameters validated, then the server chosen
 * under CNAPI's global allocation ticket (`vm-allocate`/`global` on the `default` server):
 * DAPI (`POST /allocate`) unless the caller named the server, the VM stored as `provisioning`,
 * a waitlist ticket taken on its server for the provision (what DAPI counts until the server
 * reports the VM), the allocation ticket released, and the NICs provisioned in NAPI. Any
 * failure there is the HTTP answer (CNAPI's 409 NoAllocatableServersError, NAPI's 507 ...),
 * after NICs are cleaned up, the VM record refreshed and the VM ticket released; success is
 * `202 {vm_uuid, job_uuid}` for the provision job.
 */
import { HttpStatusError } from '../../common/http-client.js';
import { params as reqParams, type Params, type Req } from '../http.js';
import { respondWithJob, setContext, syncParam, type VmapiContext } from './context.js';
import { elem, validationFailed, validUUID, VmapiError } from './errors.js';
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
import { setBhyveDisksSizes, setDefaultValues, validateCreateParams } from './validation-create.js';
import { storeVm } from './workflow-steps.js';

/** What the request builds up as it goes (VMAPI's `req.vm`, tickets, server info). */
interface CreateState {
  vm: { uuid?: string; server_uuid?: string; state?: string };
  allocationTicket?: Obj;
  vmTicket?: Obj;
  serverInfo?: Obj;
  filtered: FilteredNetworks;
}

/** POST /vms. */
export async function createVm(ctx: VmapiContext, req: Req): Promise<{ status: number; body: unknown; headers: Record<string, string> }> {
  const reqId = req.getId();
  const p: Params = structuredClone(reqParams(req));
  const { filtered, networks } = await preFilterNetworks(ctx.peers, p.networks, p.owner_uuid, reqId);
  if (networks) p.networks = networks;
  if (filtered.networks.length > 0 && !filtered.networks.some((n) => n.primary)) filtered.networks[0]!.primary = true;

  const st: CreateState = { vm: {}, filtered };
  try {
    await validateCreateParams({ vms: ctx.vms, peers: ctx.peers, reqId }, p);
    setDefaultValues(p);
    st.vm = { uuid: String(p.uuid), server_uuid: String(p.server_uuid ?? '') };
    const sync = syncParam(p.sync);
    p.sync = sync;
    stashPlacementHints(p);
    setBhyveDisksSizes(p);
    if (Array.isArray(p.volumes) && p.volumes.length > 0) {
      const errors = (p.volumes as Obj[]).map((v) => ({
        message: `Could not check reachability for volume ${String(v.name)}`,
        code: 'VolumeNotReachableError',
      }));
      throw new VmapiError('Conflict', 'Volumes not reachable from VM', { restCode: 'VolumesNotReachable', elems: errors });
    }
    await allocateServer(ctx, p, st, reqId);
    const tags = serverNicTags(st.serverInfo ?? (await getServer(ctx, String(st.vm.server_uuid), reqId)));
    if (Array.isArray(p.macs)) await checkServerNicTagsForMacs(ctx.peers, p.macs as string[], tags, reqId);
    else checkServerNicTags(tags, nicTagRequirements(filtered));
    await provisionNics(ctx, p, st, tags, reqId);
    if (p.role_tags !== undefined) createRoleTags(ctx, p);
    const job = ctx.jobs.create(ctx.workflows.provision!, provisionJobParams(req, p, st));
    return await respondWithJob(ctx, String(p.uuid), job, sync);
  } catch (err) {
    if (st.vmTicket || st.vm.uuid) {
      await cleanupNics(ctx.peers, filtered.nics, reqId);
      await refreshVmOnError(ctx, st, reqId).catch(() => undefined);
      await releaseTicket(ctx, st.vmTicket, reqId);
    }
    throw err;
  }
}

/** Affinity, locality and `encrypted` are kept in internal_metadata as VMAPI keeps them. */
function stashPlacementHints(p: Params): void {
  if (!p.affinity && !p.locality && !p.encrypted) return;
  const md = (p.internal_metadata ?? {}) as Obj;
  if (p.affinity) md.affinity = JSON.stringify(p.affinity);
  if (p.locality) md.locality = JSON.stringify(p.locality);
  if (p.encrypted) md.encrypted = true;
  p.internal_metadata = md;
}

async function getServer(ctx: VmapiContext, uuid: string, reqId: string): Promise<Obj> {
  try {
    return await ctx.peers.getServer(uuid, reqId);
  } catch (err) {
    throw relay(err);
  }
}

async function releaseTicket(ctx: VmapiContext, t: Obj | undefined, reqId: string): Promise<void> {
  if (t) await ctx.peers.releaseTicket(String(t.uuid), reqId).catch(() => undefined);
}

/** The entry of a created ticket in the queue CNAPI answered with. */
async function createTicket(ctx: VmapiContext, server: string, ticket: Obj, reqId: string): Promise<Obj> {
  try {
    const created = await ctx.peers.createTicket(server, ticket, reqId);
    return created.queue.find((t) => t.uuid === created.uuid) ?? { uuid: created.uuid, status: 'queued' };
  } catch (err) {
    throw relay(err);
  }
}

async function waitTicket(ctx: VmapiContext, t: Obj, reqId: string): Promise<void> {
  if (t.status === 'active') return;
  try {
    await ctx.peers.waitTicket(String(t.uuid), reqId);
  } catch (err) {
    throw relay(err);
  }
}

/** `allocateServer`. */
async function allocateServer(ctx: VmapiContext, p: Params, st: CreateState, reqId: string): Promise<void> {
  const reqs = p.macs && !p.networks ? undefined : nicTagRequirements(st.filtered);
  try {
    st.allocationTicket = await createTicket(
      ctx,
      'default',
      { scope: 'vm-allocate', id: 'global', expires_at: new Date(Date.now() + 60_000).toISOString(), action: 'allocate' },
      reqId,
    );
    await waitTicket(ctx, st.allocationTicket, reqId);
    if (!reqs) throw validationFailed('Invalid Parameters', [elem.missing('nictag')]);
    if (!p.image) throw validationFailed('Invalid Parameters', [elem.missing('image')]);
    if (!st.vm.server_uuid) {
      const vm: Params = { ...p, vm_uuid: p.uuid };
      let res: { server: Obj; imgapiPeers?: unknown };
      try {
        res = await ctx.peers.allocate(
          { vm, image: p.image, package: p.package, nic_tags: reqs.map((r) => r[0]), nic_tag_requirements: reqs },
          reqId,
        );
      } catch (err) {
        throw relay(err);
      }
      st.vm.server_uuid = String(res.server.uuid);
      p.imgapiPeers = res.imgapiPeers;
      const si = (res.server.sysinfo ?? {}) as Obj;
      st.serverInfo = {
        sysinfo: { 'Network Interfaces': si['Network Interfaces'], 'Virtual Network Interfaces': si['Virtual Network Interfaces'] },
      };
    }
    if (!p.do_not_inventory) {
      ctx.vms.put({
        ...structuredClone(p),
        uuid: String(p.uuid),
        state: 'provisioning',
        create_timestamp: new Date().toISOString(),
        server_uuid: st.vm.server_uuid,
      });
      await ctx.saveVms();
    }
    const extra: Obj = {
      owner_uuid: p.owner_uuid,
      max_physical_memory: p.max_physical_memory,
      cpu_cap: p.cpu_cap,
      quota: p.quota,
      brand: p.brand,
      disks: p.disks,
    };
    if ((p.brand === 'bhyve' || p.brand === 'kvm') && p.image) extra.image_size = (p.image as Obj).image_size;
    st.vmTicket = await createTicket(
      ctx,
      String(st.vm.server_uuid),
      { scope: 'vm', id: p.uuid, expires_at: new Date(Date.now() + 600_000).toISOString(), action: 'provision', extra },
      reqId,
    );
    await releaseTicket(ctx, st.allocationTicket, reqId);
    await waitTicket(ctx, st.vmTicket, reqId);
  } catch (err) {
    await refreshVmOnError(ctx, st, reqId).catch(() => undefined);
    await releaseTicket(ctx, st.vmTicket, reqId);
    await releaseTicket(ctx, st.allocationTicket, reqId);
    throw err;
  }
}

/**
 * `refreshVmOnError` (`_getVmSync` on `req.vm`): the VM as its CN has it, or, when the CN has
 * none, VMAPI's record of `req.vm` (only uuid and server) marked destroyed.
 */
async function refreshVmOnError(ctx: VmapiContext, st: CreateState, reqId: string): Promise<void> {
  const { uuid, server_uuid: server } = st.vm;
  if (!uuid) return;
  let vm: Obj | undefined;
  if (server) {
    try {
      vm = await ctx.peers.loadVm(server, uuid, reqId);
    } catch (err) {
      if (!(err instanceof HttpStatusError)) throw err;
      throw relay(err);
    }
  }
  if (vm) storeVm(ctx.env, vm);
  else {
    // markAsDestroyed of `req.vm` itself: the stored record is replaced by that stub.
    const state = (st.vm as Obj).state === 'provisioning' ? 'failed' : 'destroyed';
    const stub: Obj & { uuid: string } = { ...st.vm, uuid, state, zone_state: state };
    if (state === 'destroyed') stub.destroyed = new Date().toISOString();
    ctx.vms.put(stub);
    st.vm = stub;
  }
  await ctx.saveVms();
}

/** `provisionNics`: from networks, or the existing NICs named by `macs`. */
async function provisionNics(ctx: VmapiContext, p: Params, st: CreateState, serverTags: string[], reqId: string): Promise<void> {
  if (p.macs) {
    st.filtered.nics.push(...(await loadNicsByMac(ctx.peers, p.macs, reqId)));
    return;
  }
  if (st.filtered.networks.length === 0) {
    throw validationFailed('Invalid Parameters', [elem.missing('missing networks or macs')]);
  }
  await provisionNetNics(
    ctx.peers,
    st.filtered,
    { ownerUuid: String(p.owner_uuid), vmUuid: String(p.uuid), serverUuid: String(st.vm.server_uuid), serverTags },
    reqId,
  );
}

/** `createRoleTags` (after everything else, as VMAPI does it). */
function createRoleTags(ctx: VmapiContext, p: Params): void {
  const tags = p.role_tags;
  if (!Array.isArray(tags) || tags.length === 0) {
    throw validationFailed('Invalid VM parameters', [elem.invalid('role_tags', 'Must be an array of UUIDs')]);
  }
  for (const t of tags) {
    if (!validUUID(t)) throw validationFailed('Invalid VM parameters', [elem.uuid('role_tags', `${String(t)} is not a UUID`)]);
  }
  ctx.vms.putRoleTags(String(p.uuid), tags as string[]);
}

/** `createProvisionJob`'s params. */
function provisionJobParams(req: Req, p: Params, st: CreateState): Params {
  const jp: Params = structuredClone(p);
  jp.task = 'provision';
  jp.target = `/provision-${String(p.uuid)}`;
  jp.vm_uuid = p.uuid;
  jp.current_state = 'provisioning';
  jp['x-request-id'] = req.getId();
  delete jp.uuid;
  jp.filteredNetworks = structuredClone(st.filtered);
  jp.nics = st.filtered.nics;
  jp.server_uuid = st.vm.server_uuid;
  jp.vmTicket = st.vmTicket;
  jp.fabricNatNics = [];
  setContext(req, jp);
  return jp;
}
