/**
 * `mirror load`'s VM and NIC phases. A VM's NICs come from NAPI first, as VMAPI's provision
 * makes them (the captured MAC and IP on the loaded network; another IP when that one is
 * taken), then cn-agent's machine_create on its CN, as CNAPI sends it: vm-agent and net-agent
 * then report the VM to VMAPI and NAPI as any other. A VM the CN has already is left alone
 * ("Machine <uuid> exists."). A captured VM NIC is then checked in NAPI; others are counted.
 */
import { MockcloudError } from '../common/errors.js';
import type { HttpResponse } from '../common/http-client.js';
import { isUuid } from '../common/uuid.js';
import { ALL_BRANDS } from '../vmadm/properties.js';
import type { Obj } from './format.js';
import type { Outcome } from './load-report.js';
import { httpError, Refused, sleep, type LoadedServer, type LoadRun } from './load-run.js';

export async function loadVm(run: LoadRun, vm: Obj): Promise<Outcome> {
  const captured = String(vm.uuid);
  if (!isUuid(vm.uuid)) {
    run.note('VMs whose uuid is not a UUID (vmadm takes none; not loaded)', JSON.stringify(vm.uuid).slice(0, 80));
    return 'skipped';
  }
  const server = run.servers.get(String(vm.server_uuid));
  if (!server) {
    run.note('VMs whose server was not loaded', captured);
    return 'skipped';
  }
  const brand = typeof vm.brand === 'string' ? vm.brand : 'joyent';
  if (!(ALL_BRANDS as readonly string[]).includes(brand)) {
    run.note(`VMs of brand ${brand} (the mock CNs' vmadm has none)`, captured);
    return 'skipped';
  }
  const state = String(vm.state);
  if (state === 'destroyed' || state === 'failed') {
    run.note(`${state} VMs (not made)`, captured);
    return 'skipped';
  }
  const uuid = run.remap('vm', captured);
  if (state !== 'running' && state !== 'stopped') run.note(`VMs in state ${state} (loaded stopped)`, captured);
  const payload = createPayload(vm, uuid);
  payload.autoboot = state === 'running';
  const nics: Obj[] = [];
  for (const nic of Array.isArray(vm.nics) ? (vm.nics as Obj[]) : []) {
    const made = await vmNic(run, nic, uuid, server.uuid, String(vm.owner_uuid ?? ''));
    if (made) nics.push(made);
  }
  payload.nics = nics;
  const res = await sendTask(run, server, 'machine_create', payload);
  if (res.statusCode !== 200) {
    const message = taskError(res);
    if (/Machine \S+ exists/.test(message)) {
      run.loadedVms.set(captured, uuid);
      return 'existing';
    }
    // vmadm refused the VM as captured: a load run again sends the same and is refused again.
    if (res.statusCode < 500 || VMADM_REFUSAL.test(message)) throw new Refused(`machine_create of ${uuid} on ${server.uuid}: ${message}`);
    throw new MockcloudError('BadGateway', `machine_create of ${uuid} on ${server.uuid}: ${message}`);
  }
  // vmadm stops a VM by clearing autoboot: a captured VM whose autoboot says otherwise gets it.
  if (typeof vm.autoboot === 'boolean' && vm.autoboot !== payload.autoboot) {
    const upd = await sendTask(run, server, 'machine_update', { uuid, autoboot: vm.autoboot });
    if (upd.statusCode !== 200) run.note('VM autoboot (machine_update failed)', `${uuid}: ${taskError(upd)}`);
  }
  run.loadedVms.set(captured, uuid);
  return 'created';
}

/**
 * A VM's NIC in NAPI before the VM is made, as VMAPI's provision makes it: the captured MAC
 * and IP on the loaded network, owned by the VM. Already there for this VM (an earlier load):
 * used as it is. The IP taken: NAPI gives another. The admin network: NAPI gives the IP (the
 * loading DC's admin network is not the captured one).
 */
async function vmNic(run: LoadRun, nic: Obj, vm: string, server: string, owner: string): Promise<Obj | undefined> {
  const network = run.networks.get(String(nic.network_uuid));
  if (!network) {
    run.note('VM NICs on networks not loaded (dropped)', `${vm} ${String(nic.mac)}`);
    run.leftOutMacs.add(String(nic.mac));
    return undefined;
  }
  const mac = run.remapMac(String(nic.mac));
  const napi = run.o.urls.napi;
  const body: Obj = { mac, belongs_to_uuid: vm, belongs_to_type: 'zone', owner_uuid: owner || undefined, cn_uuid: server, check_owner: false };
  for (const k of ['primary', 'allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic', 'allow_unfiltered_promisc']) {
    if (typeof nic[k] === 'boolean') body[k] = nic[k];
  }
  if (network === run.adminNetwork) {
    run.note("VM NICs on the admin network (an address of the loading DC's admin network)", `${vm} ${String(nic.ip)}`);
  } else if (typeof nic.ip === 'string') {
    body.ip = nic.ip;
  }
  // Asked for at once (one round trip on a fresh load); a MAC NAPI has already is looked at.
  const provision = `${napi}/networks/${network}/nics`;
  let res = await run.call('POST', provision, body);
  if (res.statusCode >= 400 && res.statusCode < 500) {
    // Refused: NAPI may have the MAC already (its answer names the MAC, the IP or both).
    const have = await run.exists(`${napi}/nics/${mac.replace(/:/g, '')}`);
    if (have && have.belongs_to_uuid === vm) {
      // An earlier, interrupted load made it for this VM.
      res = { statusCode: 200, headers: {}, body: have };
    } else if (have || isDuplicate(res.body, 'mac')) {
      run.note('VM NICs whose MAC NAPI gives to something else (dropped; try --remap-uuids)', `${vm} ${mac}`);
      run.leftOutMacs.add(String(nic.mac));
      return undefined;
    }
  }
  if (res.statusCode >= 300 && body.ip !== undefined && isDuplicate(res.body, 'ip')) {
    run.note('VM IPs taken in the loading DC (another one given)', `${vm} ${String(body.ip)}`);
    delete body.ip;
    res = await run.call('POST', provision, body);
  }
  if (res.statusCode >= 300) throw httpError('POST', provision, res);
  const napiNic = res.body as Obj;
  run.vmMacs.add(String(nic.mac));
  const out: Obj = {};
  for (const k of ['interface', 'model', 'primary', 'mtu', 'allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic', 'allow_unfiltered_promisc']) {
    if (nic[k] !== undefined) out[k] = nic[k];
  }
  for (const k of ['mac', 'ip', 'netmask', 'gateway', 'nic_tag', 'vlan_id', 'network_uuid', 'mtu', 'resolvers', 'routes']) {
    if (napiNic[k] !== undefined) out[k] = napiNic[k];
  }
  out.mac = mac;
  return out;
}

/** POST /tasks on the CN, as CNAPI does; a CN not yet registered with CNAPI answers 404: waited for. */
async function sendTask(run: LoadRun, server: LoadedServer, task: string, params: Obj): Promise<HttpResponse> {
  const deadline = Date.now() + (run.o.registerTimeoutMs ?? 60_000);
  for (;;) {
    const res = await run.o.http.request({
      method: 'POST',
      url: `${server.agentUrl}/tasks`,
      headers: { 'x-server-uuid': server.uuid },
      body: { task, params },
      timeoutMs: 120_000,
    });
    if ((res.statusCode === 404 && res.body === undefined) || res.statusCode === 503) {
      if (Date.now() > deadline) throw new MockcloudError('BadGateway', `server ${server.uuid} takes no tasks (not registered with CNAPI, or paused)`);
      run.checkAborted();
      await sleep(200);
      continue;
    }
    return res;
  }
}

/**
 * A captured NIC. A VM's, of a VM this load made or found: checked in NAPI (made with its VM;
 * missing means net-agent and the load's own NIC did not get there: a failure a re-run
 * mends, as it asks NAPI for the VM's NICs again). Others are not made.
 */
export async function checkNic(run: LoadRun, n: Obj): Promise<Outcome> {
  if (n.belongs_to_type !== 'zone') {
    run.note("NICs of servers and other owners (the loaded CNs' admin NICs are the loading DC's own; others are not made)", String(n.mac));
    return 'skipped';
  }
  const vm = run.loadedVms.get(String(n.belongs_to_uuid));
  // Its VM was not loaded, or the NIC was left out (both noted already).
  if (!vm) return 'skipped';
  if (!run.vmMacs.has(String(n.mac))) {
    if (!run.leftOutMacs.has(String(n.mac))) run.note("NICs NAPI gave a VM that VMAPI's VM does not list (not made)", `${vm} ${String(n.mac)}`);
    return 'skipped';
  }
  const mac = run.remapMac(String(n.mac));
  const have = await run.exists(`${run.o.urls.napi}/nics/${mac.replace(/:/g, '')}`);
  if (have?.belongs_to_uuid === vm) return 'existing';
  throw new MockcloudError('BadGateway', `NAPI has no NIC ${mac} of VM ${vm} after the load`);
}

/** vmadm's answers to a payload it will not take (src/vmadm/errors.ts, as vmadm words them). */
const VMADM_REFUSAL = /Invalid value\(s\) for|Invalid property|Invalid (brand|uuid|payload)|is not a valid|Unknown brand/i;

/** What VMAPI shows of a VM that vmadm create does not take (runtime state, derived paths). */
const NOT_CREATE_FIELDS = [
  'state', 'zone_state', 'server_uuid', 'last_modified', 'create_timestamp', 'destroyed', 'pid', 'zoneid', 'zonedid',
  'boot_timestamp', 'exit_status', 'exit_timestamp', 'platform_buildstamp', 'zonepath', 'zfs_filesystem', 'datasets',
  'snapshots', 'zpool', 'zonename', 'transition_expire', 'transition_to', 'free_space', 'nics',
];

function createPayload(vm: Obj, uuid: string): Obj {
  const p: Obj = {};
  for (const [k, v] of Object.entries(vm)) {
    if (NOT_CREATE_FIELDS.includes(k) || v === null) continue;
    p[k] = v;
  }
  p.uuid = uuid;
  if (Array.isArray(vm.disks)) {
    p.disks = (vm.disks as Obj[]).map((d) => {
      const out: Obj = { ...d };
      for (const k of ['path', 'zfs_filesystem', 'zpool']) delete out[k];
      return out;
    });
  }
  // VMAPI's `ram` is max_physical_memory for a zone; vmadm takes it for HVM brands only.
  if (p.brand !== 'kvm' && p.brand !== 'bhyve') delete p.ram;
  return p;
}

/** NAPI's InvalidParameters for a MAC another NIC has (`Duplicate`) or an IP in use (`UsedBy`, sdc-napi errors.usedByParam). */
function isDuplicate(body: unknown, field: 'mac' | 'ip'): boolean {
  const errs = (body as { errors?: { field?: string; code?: string }[] } | undefined)?.errors;
  return Array.isArray(errs) && errs.some((e) => e.field === field && e.code === (field === 'mac' ? 'Duplicate' : 'UsedBy'));
}

function taskError(res: HttpResponse): string {
  const b = res.body as { error?: unknown; message?: unknown } | string | undefined;
  if (typeof b === 'string') return b;
  const e = b?.error ?? b?.message;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as Obj).message === 'string') return String((e as Obj).message);
  return `HTTP ${res.statusCode} ${JSON.stringify(b)}`;
}
