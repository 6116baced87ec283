/**
 * VMAPI's VM action workflows (sdc-vmapi lib/workflows/*.js), chain for chain with their names
 * and versions: each takes a CNAPI waitlist ticket on the VM, calls a CNAPI endpoint
 * (`zoneAction`), waits for the task and puts the VM the cn-agent task returned, then
 * releases the ticket (also on error). Provisioning is in workflow-provision.ts.
 *
 * As on a real DC, a destroyed VM is reported destroyed by vm-agent (the destroy workflow's
 * `vmapi.refresh_vm` does nothing unless a provision failed on the CN).
 */
import type { Step, WorkflowDef } from './jobs.js';
import { StepFailure } from './jobs.js';
import type { Obj } from './peers.js';
import { provisionWorkflow } from './workflow-provision.js';
import {
  acquireVmTicket,
  checkUpdated,
  deleteNics,
  putVm,
  releaseVmTicket,
  releaseVmTicketIgnoringErr,
  reqIdOf,
  setupRequest,
  storeVm,
  updateFwapi,
  validateForZoneAction,
  viaPeer,
  vmPath,
  waitOnVmTicket,
  waitTask,
  zoneAction,
  type Params,
  type WorkflowEnv,
} from './workflow-steps.js';

/** `ensureVmState` for start/stop/reboot. */
function ensureVmState(env: WorkflowEnv): Step {
  const desired: Record<string, string> = { start: 'stopped', stop: 'running', reboot: 'running' };
  return {
    name: 'common.ensure_vm_state',
    body: async (ctx) => {
      const vm = env.vms.get(String(ctx.params.vm_uuid));
      if (!vm) throw new StepFailure({ name: 'ResourceNotFoundError', message: 'VM not found', restCode: 'ResourceNotFound', statusCode: 404 });
      if (ctx.params.idempotent) return `VM is ${String(vm.state)}, action is idempotent`;
      const task = String(ctx.params.task);
      if (vm.state !== desired[task]) throw new Error(`Cannot ${task} a VM from a '${String(vm.state)}' state`);
      return `VM is ${String(vm.state)}`;
    },
  };
}

const validateSnapshotName: Step = {
  name: 'common.validate_snapshot_name',
  body: async (ctx) => {
    if (!ctx.params.snapshot_name) throw new StepFailure('No snapshot name provided');
    return `Snapshot name ${String(ctx.params.snapshot_name)} is valid`;
  },
};

/** `common.updateNetworkParams` (add-nics): resolvers and routes of the NICs being added. */
function updateNetworkParams(env: WorkflowEnv): Step {
  return {
    name: 'common.update_network_params',
    body: async (ctx) => {
      const toAdd = ctx.params.add_nics as Obj[] | undefined;
      if (!Array.isArray(toAdd) || toAdd.length === 0) throw new StepFailure('add_nics are required');
      const resolvers = (ctx.params.oldResolvers as unknown[] | undefined) ?? [];
      for (const nic of toAdd) {
        if (Array.isArray(nic.resolvers)) for (const r of nic.resolvers) if (!resolvers.includes(r)) resolvers.push(r);
      }
      if (ctx.params.wantResolvers && resolvers.length) ctx.params.resolvers = resolvers;
      const existing = await viaPeer(() =>
        env.peers.listNics({ belongs_to_uuid: String(ctx.params.vm_uuid), belongs_to_type: 'zone' }, reqIdOf(ctx)),
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
  };
}

/** `common.removeNetworkParams` (remove-nics): routes, resolvers and IPs of the NICs removed. */
function removeNetworkParams(env: WorkflowEnv): Step {
  return {
    name: 'common.remove_network_params',
    body: async (ctx) => {
      const macs = ctx.params.remove_nics as string[] | undefined;
      if (macs === undefined) throw new StepFailure('MAC addresses are required');
      const oldMacs = ctx.params.oldMacs as string[] | undefined;
      if (oldMacs === undefined) throw new StepFailure('Complete list of VM MAC addresses is required');
      const nics = await viaPeer(() =>
        env.peers.listNics({ belongs_to_uuid: String(ctx.params.vm_uuid), belongs_to_type: 'zone' }, reqIdOf(ctx)),
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
  };
}

/** The fabric NAT steps: the dev DC has no fabrics, so there is never a fabric NIC. */
const noFabric = {
  acquire: { name: 'cnapi.acquire_fabric_nat_tickets', body: async () => 'No fabric NICs' } as Step,
  provision: { name: 'napi.provision_fabric_nats', body: async () => 'No fabric NATs to provision' } as Step,
  wait: { name: 'cnapi.wait_for_fabric_nat_provisions', body: async () => 'No fabric NATs provisioned' } as Step,
  release: { name: 'cnapi.release_fabric_nat_tickets', body: async () => 'No fabric NAT tickets to release' } as Step,
};

export function workflows(env: WorkflowEnv): Record<string, WorkflowDef> {
  const ticketed = (name: string, timeout: number, steps: Step[], onerror: Step[] = []): WorkflowDef => ({
    name,
    timeout,
    chain: steps,
    onerror: [...onerror, releaseVmTicketIgnoringErr(env)],
  });
  const acquire = [acquireVmTicket(env), waitOnVmTicket(env)];
  const vmEndpoint = (suffix: string) => (p: Params) => `${vmPath(p)}${suffix}`;

  const start = ticketed('start-7.0.8', 410, [
    validateForZoneAction,
    ...acquire,
    ensureVmState(env),
    setupRequest('setup_start_request', 'start', 'post', vmEndpoint('/start'), 'Start request has been setup!', (ctx) => {
      ctx.state.expects = 'running';
      delete ctx.params.payload;
    }),
    zoneAction(env, 'cnapi.start_vm'),
    waitTask(env),
    putVm(env),
    releaseVmTicket(env),
  ]);

  const simpleAction = (task: string, version: string, timeout: number, expects: string, ensure: boolean): WorkflowDef =>
    ticketed(`${task}-${version}`, timeout, [
      validateForZoneAction,
      setupRequest('common.setup_request', task, 'post', vmEndpoint(`/${task}`), undefined, (ctx) => {
        ctx.state.expects = expects;
      }),
      ...acquire,
      ...(ensure ? [ensureVmState(env)] : []),
      zoneAction(env, `cnapi.${task}_vm`),
      waitTask(env),
      putVm(env),
      releaseVmTicket(env),
    ]);

  const update = ticketed('update-7.1.10', 300, [
    validateForZoneAction,
    setupRequest('common.setup_request', 'update', 'post', vmEndpoint('/update'), undefined, (ctx) => {
      const payload = ctx.params.payload as Params;
      if (payload?.new_owner_uuid) {
        ctx.params.old_owner_uuid = ctx.params.owner_uuid;
        payload.owner_uuid = payload.new_owner_uuid;
      }
    }),
    ...acquire,
    zoneAction(env, 'cnapi.update_vm'),
    waitTask(env),
    putVm(env),
    updateFwapi(env),
    releaseVmTicket(env),
  ]);

  const addNics: WorkflowDef = ticketed(
    'add-nics-7.3.1',
    300,
    [
      validateForZoneAction,
      setupRequest('common.setup_request', 'add_nics', 'post', vmEndpoint('/update')),
      noFabric.acquire,
      noFabric.provision,
      updateNetworkParams(env),
      ...acquire,
      noFabric.wait,
      zoneAction(env, 'cnapi.update_vm'),
      waitTask(env),
      checkUpdated(env),
      putVm(env),
      updateFwapi(env),
      releaseVmTicket(env),
      noFabric.release,
    ],
    [
      {
        name: 'napi.cleanup_nics',
        body: async (ctx) => {
          const nics = (ctx.params.add_nics ?? []) as Obj[];
          await deleteNics(env, nics.map((n) => String(n.mac)), reqIdOf(ctx));
          return 'NICs removed';
        },
      },
    ],
  );
  addNics.onerror = [...addNics.onerror!, noFabric.release, { name: 'On error', body: async () => Promise.reject(new StepFailure('Error executing job')) }];

  const updateNics = ticketed(
    'update-nics-7.0.5',
    300,
    [
      validateForZoneAction,
      setupRequest('common.setup_request', 'update_nics', 'post', vmEndpoint('/update')),
      ...acquire,
      {
        name: 'napi.update_nics',
        body: async (ctx) => {
          for (const nic of (ctx.params.update_nics ?? []) as Obj[]) {
            await viaPeer(() => env.peers.updateNic(String(nic.mac), nic, reqIdOf(ctx)));
          }
          return 'Updated NAPI NICs';
        },
      },
      zoneAction(env, 'cnapi.update_vm'),
      waitTask(env),
      checkUpdated(env),
      putVm(env),
      releaseVmTicket(env),
    ],
    [
      {
        name: 'napi.cleanup_nics',
        body: async (ctx) => {
          if (ctx.state.markAsFailedOnError === false) return "markAsFailedOnError was set to false, won't cleanup VM NICs";
          return 'No MACs given, and no NICs were provisioned';
        },
      },
    ],
  );

  const removeNics = ticketed('remove-nics-7.0.7', 300, [
    validateForZoneAction,
    setupRequest('common.setup_request', 'remove_nics', 'post', vmEndpoint('/update')),
    removeNetworkParams(env),
    ...acquire,
    zoneAction(env, 'cnapi.update_vm'),
    {
      name: 'napi.remove_nics',
      body: async (ctx) => {
        const macs = ctx.params.remove_nics as string[] | undefined;
        if (!Array.isArray(macs) || macs.length === 0) throw new StepFailure('No MAC addresses to remove');
        await deleteNics(env, macs, reqIdOf(ctx));
        return 'NICs removed';
      },
    },
    waitTask(env),
    checkUpdated(env),
    putVm(env),
    updateFwapi(env),
    releaseVmTicket(env),
  ]);

  const snapshotLike = (name: string, action: string, method: 'put' | 'del', suffix: (p: Params) => string, zoneName: string) =>
    ticketed(name, 180, [
      validateForZoneAction,
      validateSnapshotName,
      setupRequest('common.setup_request', action, method, (p) => `${vmPath(p)}${suffix(p)}`),
      ...acquire,
      zoneAction(env, zoneName),
      waitTask(env),
      putVm(env),
      releaseVmTicket(env),
    ]);

  const rollback = ticketed('rollback-7.0.5', 300, [
    validateForZoneAction,
    validateSnapshotName,
    setupRequest('common.setup_stop_request', 'stop', 'post', vmEndpoint('/stop'), undefined, (ctx) => {
      ctx.state.expects = 'stopped';
      if (ctx.params.vm_state === 'running') return 'Stop request has been setup';
      ctx.params.skip_zone_action = true;
      return 'No need to stop VM';
    }),
    ...acquire,
    zoneAction(env, 'cnapi.stop_vm'),
    waitTask(env, 'cnapi.poll_stop_task'),
    releaseVmTicket(env),
    setupRequest(
      'common.setup_rollback_request',
      'rollback',
      'put',
      (p) => `${vmPath(p)}/snapshots/${String(p.snapshot_name)}/rollback`,
      'Rollback request has been setup',
      (ctx) => {
        ctx.state.expects = 'running';
        delete ctx.params.skip_zone_action;
      },
    ),
    ...acquire,
    zoneAction(env, 'cnapi.rollback_vm'),
    waitTask(env, 'cnapi.poll_rollback_task'),
    putVm(env),
    releaseVmTicket(env),
  ]);

  const destroy = ticketed(
    'destroy-7.1.6',
    180,
    [
      validateForZoneAction,
      setupRequest('common.setup_request', 'destroy', 'del', (p, job) => `${vmPath(p)}?jobid=${job}`, undefined, (ctx) => {
        ctx.state.expects = 'destroyed';
        ctx.state.currentVm = ctx.params.currentVm;
      }),
      ...acquire,
      {
        name: 'napi.get_fabric_nat_nics',
        body: async (ctx) => {
          const cur = ctx.state.currentVm as Obj | undefined;
          if (!cur) return 'Skipping task -- VM missing from job';
          if (!Array.isArray(cur.nics)) return 'Skipping task -- VM is missing .nics';
          ctx.params.fabricNatNics = [];
          return 'Fabric NIC count: 0';
        },
      },
      zoneAction(env, 'cnapi.destroy_vm'),
      {
        name: 'vmapi.mark_vm_as_destroyed',
        body: async (ctx) => {
          const cur = ctx.state.currentVm as Obj | undefined;
          if (!cur) return 'Skipping task -- VM missing from job';
          if (!cur.docker) return 'Skipping task for non-Docker VMs';
          storeVm(env, { ...cur, state: 'destroyed' });
          await env.saveVms();
          return 'VM marked as destroyed';
        },
      },
      waitTask(env),
      { name: 'vmapi.refresh_vm', body: async () => 'markAsFailedOnError set, not doing sync GET' },
      {
        name: 'napi.remove_nics',
        body: async (ctx) => {
          const cur = ctx.state.currentVm as Obj | undefined;
          if (!cur) return 'Skipping task -- VM missing from job';
          if (!Array.isArray(cur.nics)) return 'Skipping task -- VM is missing .nics';
          const macs = (cur.nics as Obj[]).map((n) => n.mac).filter((m): m is string => typeof m === 'string' && m !== '');
          if (macs.length === 0) return 'No MAC addresses to remove';
          await deleteNics(env, macs, reqIdOf(ctx));
          return 'NICs removed';
        },
      },
      updateFwapi(env),
      {
        name: 'volapi.remove_volumes_references',
        body: async () => 'URL for volapi service not present, not provisioning NFS volume',
      },
      releaseVmTicket(env),
      noFabric.acquire,
      { name: 'napi.destroy_fabric_nats', body: async () => 'No fabric NATs to destroy' },
      noFabric.release,
    ],
    [{ name: 'vmapi.refresh_vm', body: async () => 'markAsFailedOnError set, not doing sync GET' }],
  );
  destroy.onerror = [...destroy.onerror!, noFabric.release];

  return {
    provision: provisionWorkflow(env),
    start,
    stop: simpleAction('stop', '7.0.8', 530, 'stopped', true),
    reboot: simpleAction('reboot', '7.0.6', 590, 'running', true),
    kill: simpleAction('kill', '7.0.2', 210, 'running', false),
    reprovision: simpleAction('reprovision', '7.0.4', 210, 'running', false),
    update,
    add_nics: addNics,
    update_nics: updateNics,
    remove_nics: removeNics,
    snapshot: snapshotLike('snapshot-7.0.4', 'snapshot', 'put', () => '/snapshots', 'cnapi.snapshot_vm'),
    rollback,
    delete_snapshot: snapshotLike(
      'delete-snapshot-7.0.4',
      'delete_snapshot',
      'del',
      (p) => `/snapshots/${String(p.snapshot_name)}`,
      'cnapi.delete_snapshot',
    ),
    destroy,
  };
}
