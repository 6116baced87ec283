/**
 * VMAPI's provision workflow (sdc-vmapi lib/workflows/provision.js, provision-8.2.4), chain
 * for chain: the server was chosen and the VM's CNAPI waitlist ticket taken by CreateVm, so
 * the job ensures the image, builds the payload, asks CNAPI for the VM, puts the VM the task
 * returned and releases the ticket. On error, NICs that never reached the CN are deleted and
 * the VM is posted back as failed (VMAPI's `/job_results`), and the ticket is released.
 * Fabric and NFS volume steps answer as they do in a DC without fabrics or VOLAPI.
 */
import { randomInt } from 'node:crypto';
import type { JobContext, Step, WorkflowDef } from './jobs.js';
import { StepFailure } from './jobs.js';
import type { Obj } from './peers.js';
import {
  deleteNics,
  putVm,
  refreshVm,
  releaseVmTicket,
  reqIdOf,
  storeVm,
  updateFwapi,
  viaPeer,
  waitTask,
  type Params,
  type WorkflowEnv,
} from './workflow-steps.js';
import { translateVm } from './translate.js';

const PAYLOAD_KEYS = [
  'alias', 'autoboot', 'billing_id', 'brand', 'cpu_cap', 'cpu_shares', 'customer_metadata', 'delegate_dataset',
  'dns_domain', 'docker', 'do_not_inventory', 'firewall_enabled', 'firewall_rules', 'fs_allowed', 'hostname',
  'indestructible_zoneroot', 'indestructible_delegated', 'init_name', 'internal_metadata', 'kernel_version',
  'limit_priv', 'maintain_resolvers', 'max_locked_memory', 'max_lwps', 'max_msg_ids', 'max_physical_memory',
  'max_shm_memory', 'max_sem_ids', 'max_shm_ids', 'max_swap', 'mdata_exec_timeout', 'nics', 'owner_uuid', 'quota',
  'ram', 'resolvers', 'vcpus', 'zfs_data_compression', 'zfs_io_priority', 'zfs_snapshot_limit', 'zlog_max_size',
  'tags', 'tmpfs',
];

/** `preparePayload`: what CNAPI's VmCreate gets. */
export function provisionPayload(params: Params): Params {
  const image = (params.image ?? {}) as Obj;
  const payload: Params = { uuid: params.vm_uuid, image };
  const tags = image.tags as Obj | undefined;
  if (tags && 'kernel_version' in tags && !('kernel_version' in params)) params.kernel_version = tags.kernel_version;
  if (image.type === 'lx-dataset' || image.type === 'lxd') params.brand = 'lx';
  for (const k of PAYLOAD_KEYS) if (params[k] !== undefined) payload[k] = params[k];
  payload.archive_on_delete = true;
  const im = params.internal_metadata as Obj | undefined;
  const wantResolvers = !(im && typeof im === 'object' && im.set_resolvers === false);
  const nicResolvers: unknown[] = [];
  const routes: Obj = {};
  for (const nic of (params.nics ?? []) as Obj[]) {
    if (Array.isArray(nic.resolvers)) for (const r of nic.resolvers) if (!nicResolvers.includes(r)) nicResolvers.push(r);
    if (nic.routes && typeof nic.routes === 'object') {
      for (const [r, gw] of Object.entries(nic.routes as Obj)) if (!(r in routes)) routes[r] = gw;
    }
  }
  if (wantResolvers) {
    if (payload.resolvers) {
      payload.internal_metadata = { ...((payload.internal_metadata as Obj | undefined) ?? {}), no_nic_resolvers: true };
    } else payload.resolvers = nicResolvers;
  }
  if (Object.keys(routes).length) payload.routes = routes;
  if (params.brand === 'bhyve' || params.brand === 'kvm') {
    payload.disks = params.disks;
    const other = ['disk_driver', 'nic_driver', 'cpu_type', ...(params.brand === 'bhyve' ? ['flexible_disk_size'] : [])];
    for (const f of other) payload[f] = params[f] ? params[f] : image[f];
    delete payload.quota;
  } else {
    payload.image_uuid = params.image_uuid;
    if (params.filesystems !== undefined) payload.filesystems = params.filesystems;
  }
  if (params.imgapiPeers !== undefined) payload.imgapiPeers = params.imgapiPeers;
  return payload;
}

/** apg's `-m 12 -M SCNL`: 12 characters with symbols, capitals, numbers and lower case. */
function generatePassword(): string {
  const sets = ['ABCDEFGHJKLMNPQRSTUVWXYZ', 'abcdefghijkmnopqrstuvwxyz', '23456789', '!#+,-;<=>?^_{|}~'];
  const all = sets.join('');
  const chars = sets.map((s) => s[randomInt(s.length)]!);
  while (chars.length < 12) chars.push(all[randomInt(all.length)]!);
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j]!, chars[i]!];
  }
  return chars.join('');
}

/** `/job_results` for a failed provision: the VM, merged with the job's params, becomes `failed`. */
export function postBackFailed(env: WorkflowEnv, params: Params): boolean {
  const uuid = String(params.vm_uuid);
  const cur = env.vms.getRaw(uuid);
  if (!cur) return false;
  const merged: Obj = { ...cur, ...params, uuid, state: 'failed', zone_state: 'failed' };
  env.vms.put(translateVm(merged, false));
  return true;
}

export function provisionWorkflow(env: WorkflowEnv): WorkflowDef {
  const imageUuidOf = (p: Params): unknown =>
    p.brand === 'bhyve' || p.brand === 'kvm' ? ((p.disks as Obj[] | undefined)?.[0]?.image_uuid as unknown) : p.image_uuid;
  const step = (name: string, body: (ctx: JobContext) => Promise<string>): Step => ({ name, body });

  const chain: Step[] = [
    step('common.validate_params', async (ctx) => {
      if (ctx.params.owner_uuid === undefined) throw new StepFailure("'owner_uuid' is required");
      if (ctx.params.brand === undefined) throw new StepFailure("VM 'brand' is required");
      return 'All parameters OK!';
    }),
    step('workflow.set_job_action', async (ctx) => {
      ctx.state.action = 'provision';
      return 'Action set';
    }),
    step('imgapi.generate_passwords', async (ctx) => {
      const image = (ctx.params.image ?? {}) as Obj;
      if (image.generate_passwords === false) return 'No need to generate passwords for image';
      if (!Array.isArray(image.users)) return 'Image has generate_passwords=true but no users found';
      const md = ((ctx.params.internal_metadata ??= {}) as Obj);
      for (const user of image.users as Obj[]) {
        const key = `${String(user.name)}_pw`;
        if (md[key] === undefined) md[key] = generatePassword();
      }
      return 'Passwords generated for Image';
    }),
    step('cnapi.acquire_fabric_nat_tickets', async () => 'No fabric NICs'),
    step('napi.provision_fabric_nats', async () => 'No fabric NATs to provision'),
    step('cnapi.ensure_image', async (ctx) => {
      const p = ctx.params;
      const body: Params = { image_uuid: imageUuidOf(p) };
      if (p.imgapiPeers !== undefined) body.imgapiPeers = p.imgapiPeers;
      ctx.state.taskId = await viaPeer(() =>
        env.peers.cnapiTask('POST', `/servers/${String(p.server_uuid)}/ensure-image`, body, reqIdOf(ctx)),
      );
      return 'Ensure image task queued!';
    }),
    waitTask(env, 'cnapi.wait_task_ensure_image'),
    step('cnapi.wait_for_fabric_nat_provisions', async () => 'No fabric NATs provisioned'),
    step('volapi.provision_nfs_volumes', async () => 'URL for volapi service not present, not provisioning NFS volumes'),
    step('cnapi.wait_for_nfs_volumes_provisions', async () => 'No required NFS volume to wait for'),
    step('cnapi.build_nfs_volumes_metadata', async () => "No NFS volume with which to update VM's internal metadata"),
    step('prepare_payload', async (ctx) => {
      ctx.params.jobid = ctx.job.uuid;
      ctx.params.payload = provisionPayload(ctx.params);
      return 'Payload prepared successfully';
    }),
    step('cnapi.provision_vm', async (ctx) => {
      delete ctx.params.skip_zone_action;
      ctx.params.jobid = ctx.job.uuid;
      const autoboot = ctx.params.autoboot;
      ctx.state.expects = autoboot === false || autoboot === 'false' ? 'stopped' : 'running';
      const im = ctx.params.internal_metadata as Obj | undefined;
      if (im && im.force_provision_failure) throw new StepFailure('force_provision_failure set, failing');
      const id = await viaPeer(() =>
        env.peers.cnapiTask('POST', `/servers/${String(ctx.params.server_uuid)}/vms`, ctx.params.payload, reqIdOf(ctx)),
      );
      ctx.state.taskId = id;
      // From here on the VM exists on the CN whatever happens: its NICs stay.
      ctx.state.markAsFailedOnError = false;
      return `Provision task: ${id} queued!`;
    }),
    waitTask(env),
    step('volapi.add_volumes_references', async () => 'No created NFS volume to which a reference needs to be added'),
    putVm(env),
    updateFwapi(env),
    releaseVmTicket(env),
    step('cnapi.release_fabric_nat_tickets', async () => 'No fabric NAT tickets to release'),
  ];

  const onerror: Step[] = [
    step('napi.cleanup_nics', async (ctx) => {
      if (ctx.state.markAsFailedOnError === false) return "markAsFailedOnError was set to false, won't cleanup VM NICs";
      const p = ctx.params;
      const nics = (p.add_nics ?? p.nics ?? (p.filteredNetworks as Obj | undefined)?.nics) as Obj[] | undefined;
      if (!nics) return 'No MACs given, and no NICs were provisioned';
      await deleteNics(env, nics.map((n) => String(n.mac)), reqIdOf(ctx));
      return 'NICs removed';
    }),
    step('set_post_back_failed', async (ctx) => {
      if (ctx.state.markAsFailedOnError === false) return "markAsFailedOnError was set to false, won't set postBackState for VM";
      ctx.state.postBackState = 'failed';
      return 'Set post back state as failed';
    }),
    step('common.post_back', async (ctx) => {
      if (ctx.state.markAsFailedOnError === false) {
        return "markAsFailedOnError was set to false, won't postBack provision failure to VMAPI";
      }
      if (ctx.state.postBackState !== 'failed' || !postBackFailed(env, ctx.params)) {
        return 'Could not post back job results. See /info object';
      }
      await env.saveVms();
      return 'Posted job results back to specified URLs';
    }),
    step('cnapi.cleanup_allocation_ticket', async () => ''),
    { ...releaseVmTicket(env), name: 'cnapi.cleanup_vm_ticket' },
    refreshVm(env, 'vmapi.refresh_vm_on_error', async (ctx) => {
      const p = ctx.params;
      const vm = await env.peers.loadVm(String(p.server_uuid), String(p.vm_uuid), reqIdOf(ctx));
      if (vm) storeVm(env, vm);
      else env.vms.markAsDestroyed(String(p.vm_uuid));
      await env.saveVms();
      return vm ?? env.vms.get(String(p.vm_uuid));
    }),
    step('cnapi.release_fabric_nat_tickets', async () => 'No fabric NAT tickets to release'),
    step('On error', async () => Promise.reject(new StepFailure('Error executing job'))),
  ];

  return { name: 'provision-8.2.4', timeout: 3810, chain, onerror };
}
