/**
 * VMAPI's workflows (sdc-vmapi lib/workflows/*.js), step for step where a step talks to a
 * peer: each VM action calls a CNAPI endpoint (`zoneAction`), waits for the task
 * (`GET /tasks/:id/wait`) and puts the VM the cn-agent task returned (`finish({vm})`) into
 * VMAPI's store. Tickets, FWAPI, VOLAPI and post-back steps have nothing to talk to here
 * and are left out.
 *
 * One difference, on purpose: after a destroy, VMAPI relies on vm-agent to report the VM
 * gone; here the destroy job itself refreshes the VM from CNAPI (VmLoad's 404 marks it
 * destroyed), so VMAPI shows the outcome with or without a vm-agent.
 */
import type { Logger } from '../../common/log.js';
import type { JobContext, Step, WorkflowDef } from './jobs.js';
import type { Obj, Peers, CnapiTask } from './peers.js';
import type { VmRegistry } from './vms.js';

export interface WorkflowEnv {
  peers: Peers;
  vms: VmRegistry;
  log: Logger;
  /** Persist VMAPI's VM store after a change (durable). */
  saveVms(): Promise<void>;
}

type Params = Record<string, unknown>;

const reqIdOf = (ctx: JobContext): string => String(ctx.params['x-request-id'] ?? ctx.job.uuid);
const vmPath = (p: Params): string => `/servers/${String(p.server_uuid)}/vms/${String(p.vm_uuid)}`;

/** `common.zoneAction`: POST/PUT/DELETE a CNAPI endpoint with the payload (or the params). */
function zoneAction(
  env: WorkflowEnv,
  name: string,
  method: 'POST' | 'PUT' | 'DELETE',
  endpoint: (p: Params) => string,
): Step {
  return {
    name,
    body: async (ctx) => {
      if (ctx.params.skip_zone_action) return 'Skipping zoneAction';
      ctx.params.jobid = ctx.job.uuid;
      const body = (ctx.params.payload as Params | undefined) ?? ctx.params;
      const id = await env.peers.cnapiTask(method, endpoint(ctx.params), body, reqIdOf(ctx));
      ctx.state.taskId = id;
      return `Task id: ${id} queued to CNAPI!`;
    },
  };
}

/** `common.waitTask`: the task's error message on failure, its `finish` vm on success. */
function waitTask(env: WorkflowEnv, name = 'cnapi.wait_task'): Step {
  return {
    name,
    body: async (ctx) => {
      if (ctx.params.skip_zone_action) return 'Skipping waitTask';
      const id = ctx.state.taskId;
      if (typeof id !== 'string') throw new Error('No taskId provided');
      const task = await env.peers.waitTask(id, reqIdOf(ctx));
      if (task.status === 'failure') throw new Error(taskErrorMessage(task));
      const first = task.history?.[0];
      if (first?.name === 'finish' && first.event && typeof first.event.vm === 'object' && first.event.vm) {
        ctx.state.finished_vm = first.event.vm;
      }
      return 'Job succeeded!';
    },
  };
}

/** `getErrorMesage` of job-common.js. */
export function taskErrorMessage(task: CnapiTask): string {
  let message: string | undefined;
  for (const ev of task.history ?? []) {
    const e = ev.event as { error?: unknown; details?: { error?: string } } | undefined;
    if (ev.name === 'error' && e?.error) {
      if (typeof e.error === 'string') {
        message = e.error + (e.details?.error ? `, ${e.details.error}` : '');
      } else {
        message = String((e.error as { message?: unknown }).message);
      }
    }
  }
  return message ?? 'Unexpected error occured';
}

/** `common.putVm`: store the VM the task returned, as `PUT /vms/:uuid` would. */
function putVm(env: WorkflowEnv): Step {
  return {
    name: 'vmapi.put_vm',
    body: async (ctx) => {
      if (ctx.params.do_not_inventory) return 'VM has do_not_inventory set, no need to putVm to VMAPI';
      let vm = ctx.state.finished_vm as Obj | undefined;
      if (!vm) {
        // Old agents return no VM; VMAPI then polled until the state matched. Ask the CN.
        vm = await env.peers.loadVm(String(ctx.params.server_uuid), String(ctx.params.vm_uuid), reqIdOf(ctx));
        if (!vm) throw new Error(`VM ${String(ctx.params.vm_uuid)} not found on its server`);
      }
      storeVm(env, vm);
      await env.saveVms();
      return `put VM ${String(vm.uuid)} to VMAPI`;
    },
  };
}

/** `PUT /vms/:uuid` semantics: `state: destroyed` marks it destroyed, anything else is stored. */
export function storeVm(env: { vms: VmRegistry }, vm: Obj): void {
  const uuid = String(vm.uuid);
  if (vm.state === 'destroyed') env.vms.markAsDestroyed(uuid, vm);
  else env.vms.put({ ...vm, uuid });
}

/** `GET /vms/:uuid?sync=true`: reload from the CN; gone means destroyed. */
export async function refreshFromCn(env: WorkflowEnv, serverUuid: string, vmUuid: string, reqId: string): Promise<Obj | undefined> {
  const vm = await env.peers.loadVm(serverUuid, vmUuid, reqId);
  if (vm) storeVm(env, vm);
  else env.vms.markAsDestroyed(vmUuid);
  await env.saveVms();
  return vm;
}

/** `common.ensureVmState` for start/stop/reboot. */
function ensureVmState(env: WorkflowEnv): Step {
  const desired: Record<string, string> = { start: 'stopped', stop: 'running', reboot: 'running' };
  return {
    name: 'common.ensure_vm_state',
    body: async (ctx) => {
      const vm = env.vms.get(String(ctx.params.vm_uuid));
      if (!vm) throw new Error('VM not found');
      if (ctx.params.idempotent) return `VM is ${String(vm.state)}, action is idempotent`;
      const task = String(ctx.params.task);
      if (vm.state !== desired[task]) throw new Error(`Cannot ${task} a VM from a '${String(vm.state)}' state`);
      return `VM is ${String(vm.state)}`;
    },
  };
}

const validateParams: Step = {
  name: 'common.validate_params',
  body: async (ctx) => {
    if (!ctx.params.vm_uuid) throw new Error('No VM UUID provided');
    if (!ctx.params.server_uuid) throw new Error('No server_uuid provided');
    return 'All parameters OK!';
  },
};

/** Delete NICs in NAPI (destroy, remove-nics, cleanup); already-gone NICs are fine. */
async function deleteNics(env: WorkflowEnv, macs: string[], reqId: string): Promise<void> {
  for (const mac of macs) await env.peers.deleteNic(mac, reqId);
}

/** The provision payload VMAPI's `prepare_payload` builds for CNAPI's VmCreate. */
export function provisionPayload(params: Params): Params {
  const image = (params.image ?? {}) as Obj;
  const payload: Params = { uuid: params.vm_uuid, image };
  const keys = [
    'alias', 'autoboot', 'billing_id', 'brand', 'cpu_cap', 'cpu_shares', 'customer_metadata', 'delegate_dataset',
    'dns_domain', 'docker', 'do_not_inventory', 'firewall_enabled', 'firewall_rules', 'fs_allowed', 'hostname',
    'indestructible_zoneroot', 'indestructible_delegated', 'init_name', 'internal_metadata', 'kernel_version',
    'limit_priv', 'maintain_resolvers', 'max_locked_memory', 'max_lwps', 'max_msg_ids', 'max_physical_memory',
    'max_shm_memory', 'max_sem_ids', 'max_shm_ids', 'max_swap', 'mdata_exec_timeout', 'nics', 'owner_uuid', 'quota',
    'ram', 'resolvers', 'vcpus', 'zfs_data_compression', 'zfs_io_priority', 'zfs_snapshot_limit', 'zlog_max_size',
    'tags', 'tmpfs',
  ];
  const brand = image.type === 'lx-dataset' || image.type === 'lxd' ? 'lx' : params.brand;
  for (const k of keys) if (params[k] !== undefined) payload[k] = params[k];
  payload.brand = brand;
  payload.archive_on_delete = true;

  const im = params.internal_metadata as Obj | undefined;
  const wantResolvers = !(im && typeof im === 'object' && im.set_resolvers === false);
  const nics = (Array.isArray(params.nics) ? params.nics : []) as Obj[];
  const nicResolvers: unknown[] = [];
  const routes: Obj = {};
  for (const nic of nics) {
    if (Array.isArray(nic.resolvers)) for (const r of nic.resolvers) if (!nicResolvers.includes(r)) nicResolvers.push(r);
    if (nic.routes && typeof nic.routes === 'object') {
      for (const [r, gw] of Object.entries(nic.routes as Obj)) if (!(r in routes)) routes[r] = gw;
    }
  }
  if (wantResolvers) {
    if (payload.resolvers) {
      payload.internal_metadata = { ...((payload.internal_metadata as Obj) ?? {}), no_nic_resolvers: true };
    } else {
      payload.resolvers = nicResolvers;
    }
  }
  if (Object.keys(routes).length) payload.routes = routes;
  if (brand === 'bhyve' || brand === 'kvm') {
    payload.disks = params.disks;
    const other = ['disk_driver', 'nic_driver', 'cpu_type', ...(brand === 'bhyve' ? ['flexible_disk_size'] : [])];
    for (const f of other) {
      const v = params[f] ?? image[f];
      if (v !== undefined) payload[f] = v;
    }
    delete payload.quota;
  } else {
    payload.image_uuid = params.image_uuid;
    if (params.filesystems !== undefined) payload.filesystems = params.filesystems;
  }
  if (params.imgapiPeers !== undefined) payload.imgapiPeers = params.imgapiPeers;
  return payload;
}

export function workflows(env: WorkflowEnv): Record<string, WorkflowDef> {
  const vmAction = (task: 'start' | 'stop' | 'reboot', version: string, cnapiAction: string): WorkflowDef => ({
    name: `${task}-${version}`,
    timeout: 180,
    chain: [
      validateParams,
      ensureVmState(env),
      {
        name: 'common.setup_request',
        body: async (ctx) => {
          delete ctx.params.payload;
          return 'Request has been setup!';
        },
      },
      zoneAction(env, `cnapi.${task}_vm`, 'POST', (p) => `${vmPath(p)}/${cnapiAction}`),
      waitTask(env),
      putVm(env),
    ],
  });

  const provision: WorkflowDef = {
    name: 'provision-8.2.4',
    timeout: 3810,
    chain: [
      validateParams,
      {
        name: 'cnapi.ensure_image',
        body: async (ctx) => {
          const p = ctx.params;
          const brand = p.brand;
          const imageUuid =
            brand === 'bhyve' || brand === 'kvm' ? ((p.disks as Obj[] | undefined)?.[0]?.image_uuid as string) : p.image_uuid;
          const body: Params = { image_uuid: imageUuid };
          if (p.imgapiPeers !== undefined) body.imgapiPeers = p.imgapiPeers;
          ctx.state.taskId = await env.peers.cnapiTask('POST', `/servers/${String(p.server_uuid)}/ensure-image`, body, reqIdOf(ctx));
          return 'Ensure image task queued!';
        },
      },
      waitTask(env, 'cnapi.wait_task_ensure_image'),
      {
        name: 'prepare_payload',
        body: async (ctx) => {
          ctx.params.payload = provisionPayload(ctx.params);
          return 'Payload prepared successfully';
        },
      },
      {
        name: 'cnapi.provision_vm',
        body: async (ctx) => {
          ctx.params.jobid = ctx.job.uuid;
          const id = await env.peers.cnapiTask(
            'POST',
            `/servers/${String(ctx.params.server_uuid)}/vms`,
            ctx.params.payload,
            reqIdOf(ctx),
          );
          ctx.state.taskId = id;
          // From here on the VM exists on the CN whatever happens: NICs stay.
          ctx.state.markAsFailedOnError = false;
          return `Provision task: ${id} queued!`;
        },
      },
      waitTask(env),
      putVm(env),
    ],
    onerror: [
      {
        name: 'napi.cleanup_nics',
        body: async (ctx) => {
          if (ctx.state.markAsFailedOnError === false) return 'markAsFailedOnError was set to false, won\'t cleanup VM NICs';
          const nics = (Array.isArray(ctx.params.nics) ? ctx.params.nics : []) as Obj[];
          await deleteNics(env, nics.map((n) => String(n.mac)), reqIdOf(ctx));
          return 'NICs removed';
        },
      },
      {
        name: 'vmapi.refresh_vm_on_error',
        body: async (ctx) => {
          const uuid = String(ctx.params.vm_uuid);
          if (ctx.state.markAsFailedOnError !== false) {
            // The VM never reached the CN: VMAPI's post-back marks it failed.
            const cur = env.vms.getRaw(uuid);
            if (cur) env.vms.put({ ...cur, state: 'failed', zone_state: 'failed' });
            await env.saveVms();
            return 'VM marked as failed';
          }
          const vm = await refreshFromCn(env, String(ctx.params.server_uuid), uuid, reqIdOf(ctx));
          return `VM data refreshed, new VM state is ${vm ? String(vm.state) : 'failed'}`;
        },
      },
    ],
  };

  const update: WorkflowDef = {
    name: 'update-7.1.10',
    timeout: 180,
    chain: [
      validateParams,
      {
        name: 'common.setup_request',
        body: async (ctx) => {
          const payload = ctx.params.payload as Params;
          if (payload?.new_owner_uuid) {
            ctx.params.old_owner_uuid = ctx.params.owner_uuid;
            payload.owner_uuid = payload.new_owner_uuid;
          }
          return 'Request has been setup!';
        },
      },
      zoneAction(env, 'cnapi.update_vm', 'POST', (p) => `${vmPath(p)}/update`),
      waitTask(env),
      putVm(env),
    ],
  };

  const addNics: WorkflowDef = {
    name: 'add-nics-7.3.1',
    timeout: 180,
    chain: [
      validateParams,
      {
        name: 'common.update_network_params',
        body: async (ctx) => {
          const toAdd = (ctx.params.add_nics ?? []) as Obj[];
          if (!Array.isArray(toAdd) || toAdd.length === 0) throw new Error('add_nics are required');
          const resolvers = [...((ctx.params.oldResolvers as unknown[]) ?? [])];
          for (const nic of toAdd) {
            if (Array.isArray(nic.resolvers)) for (const r of nic.resolvers) if (!resolvers.includes(r)) resolvers.push(r);
          }
          if (ctx.params.wantResolvers && resolvers.length) ctx.params.resolvers = resolvers;
          const existing = await env.peers.listNics(
            { belongs_to_uuid: String(ctx.params.vm_uuid), belongs_to_type: 'zone' },
            reqIdOf(ctx),
          );
          const routes: Obj = {};
          for (const nic of [...existing, ...toAdd]) {
            if (nic.routes && typeof nic.routes === 'object') {
              for (const [r, gw] of Object.entries(nic.routes as Obj)) if (!(r in routes)) routes[r] = gw;
            }
          }
          if (Object.keys(routes).length) ctx.params.set_routes = routes;
          return 'Added network parameters to payload';
        },
      },
      zoneAction(env, 'cnapi.update_vm', 'POST', (p) => `${vmPath(p)}/update`),
      waitTask(env),
      putVm(env),
    ],
    onerror: [
      {
        name: 'napi.cleanup_nics',
        body: async (ctx) => {
          const nics = (Array.isArray(ctx.params.add_nics) ? ctx.params.add_nics : []) as Obj[];
          await deleteNics(env, nics.map((n) => String(n.mac)), reqIdOf(ctx));
          return 'NICs removed';
        },
      },
    ],
  };

  const removeNics: WorkflowDef = {
    name: 'remove-nics-7.0.7',
    timeout: 180,
    chain: [
      validateParams,
      {
        name: 'common.remove_network_params',
        body: async (ctx) => {
          const macs = ctx.params.remove_nics as string[];
          const oldMacs = (ctx.params.oldMacs ?? []) as string[];
          const nics = await env.peers.listNics(
            { belongs_to_uuid: String(ctx.params.vm_uuid), belongs_to_type: 'zone' },
            reqIdOf(ctx),
          );
          const del = nics.filter((n) => macs.includes(String(n.mac)));
          const keep = nics.filter((n) => !macs.includes(String(n.mac)));
          const keepNets = keep.map((n) => n.network_uuid);
          const routes: string[] = [];
          for (const nic of del) {
            if (nic.routes && typeof nic.routes === 'object' && !keepNets.includes(nic.network_uuid)) {
              for (const r of Object.keys(nic.routes as Obj)) if (!routes.includes(r)) routes.push(r);
            }
          }
          if (routes.length) ctx.params.remove_routes = routes;
          const resolvers: unknown[] = [];
          for (const mac of oldMacs) {
            const n = keep.find((k) => k.mac === mac);
            if (n && Array.isArray(n.resolvers)) for (const r of n.resolvers) if (!resolvers.includes(r)) resolvers.push(r);
          }
          if (ctx.params.wantResolvers && resolvers.length) ctx.params.resolvers = resolvers;
          ctx.params.remove_ips = del.map((n) => n.ip);
          return 'Added network parameters to payload';
        },
      },
      zoneAction(env, 'cnapi.update_vm', 'POST', (p) => `${vmPath(p)}/update`),
      {
        name: 'napi.remove_nics',
        body: async (ctx) => {
          const macs = ctx.params.remove_nics as string[];
          if (!Array.isArray(macs) || macs.length === 0) throw new Error('No MAC addresses to remove');
          await deleteNics(env, macs, reqIdOf(ctx));
          return 'NICs removed';
        },
      },
      waitTask(env),
      putVm(env),
    ],
  };

  const kill: WorkflowDef = {
    name: 'kill-7.0.2',
    timeout: 180,
    chain: [validateParams, zoneAction(env, 'cnapi.kill_vm', 'POST', (p) => `${vmPath(p)}/kill`), waitTask(env), putVm(env)],
  };

  const reprovision: WorkflowDef = {
    name: 'reprovision-7.0.4',
    timeout: 180,
    chain: [
      validateParams,
      zoneAction(env, 'cnapi.reprovision_vm', 'POST', (p) => `${vmPath(p)}/reprovision`),
      waitTask(env),
      putVm(env),
    ],
  };

  const snapshot: WorkflowDef = {
    name: 'snapshot-7.0.4',
    timeout: 180,
    chain: [
      validateParams,
      zoneAction(env, 'cnapi.snapshot_vm', 'PUT', (p) => `${vmPath(p)}/snapshots`),
      waitTask(env),
      putVm(env),
    ],
  };

  const rollback: WorkflowDef = {
    name: 'rollback-7.0.5',
    timeout: 300,
    chain: [
      validateParams,
      {
        name: 'common.setup_stop_request',
        body: async (ctx) => {
          if (ctx.params.vm_state === 'running') return 'Stop request has been setup';
          ctx.params.skip_zone_action = true;
          return 'No need to stop VM';
        },
      },
      zoneAction(env, 'cnapi.stop_vm', 'POST', (p) => `${vmPath(p)}/stop`),
      waitTask(env, 'cnapi.poll_stop_task'),
      {
        name: 'common.setup_rollback_request',
        body: async (ctx) => {
          delete ctx.params.skip_zone_action;
          return 'Rollback request has been setup';
        },
      },
      zoneAction(
        env,
        'cnapi.rollback_vm',
        'PUT',
        (p) => `${vmPath(p)}/snapshots/${encodeURIComponent(String(p.snapshot_name))}/rollback`,
      ),
      waitTask(env, 'cnapi.poll_rollback_task'),
      putVm(env),
    ],
  };

  const deleteSnapshot: WorkflowDef = {
    name: 'delete-snapshot-7.0.4',
    timeout: 180,
    chain: [
      validateParams,
      zoneAction(
        env,
        'cnapi.delete_snapshot',
        'DELETE',
        (p) => `${vmPath(p)}/snapshots/${encodeURIComponent(String(p.snapshot_name))}`,
      ),
      waitTask(env),
      putVm(env),
    ],
  };

  const destroy: WorkflowDef = {
    name: 'destroy-7.1.6',
    timeout: 300,
    chain: [
      validateParams,
      zoneAction(env, 'cnapi.destroy_vm', 'DELETE', (p) => `${vmPath(p)}?jobid=${String(p.jobid ?? '')}`),
      waitTask(env),
      {
        name: 'vmapi.refresh_vm',
        body: async (ctx) => {
          const vm = await refreshFromCn(env, String(ctx.params.server_uuid), String(ctx.params.vm_uuid), reqIdOf(ctx));
          return `VM data refreshed, new VM state is ${vm ? String(vm.state) : 'destroyed'}`;
        },
      },
      {
        name: 'napi.remove_nics',
        body: async (ctx) => {
          const cur = ctx.params.currentVm as Obj | undefined;
          const nics = (cur && Array.isArray(cur.nics) ? cur.nics : []) as Obj[];
          const macs = nics.map((n) => n.mac).filter((m): m is string => typeof m === 'string');
          if (macs.length === 0) return 'No MAC addresses to remove';
          await deleteNics(env, macs, reqIdOf(ctx));
          return 'NICs removed';
        },
      },
    ],
  };

  return {
    provision,
    start: vmAction('start', '7.0.8', 'start'),
    stop: vmAction('stop', '7.0.8', 'stop'),
    reboot: vmAction('reboot', '7.0.6', 'reboot'),
    kill,
    update,
    add_nics: addNics,
    remove_nics: removeNics,
    reprovision,
    snapshot,
    rollback,
    delete_snapshot: deleteSnapshot,
    destroy,
  };
}
