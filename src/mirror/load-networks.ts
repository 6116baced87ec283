/**
 * `mirror load`'s NAPI phase: nic tags, networks and network pools, each made unless NAPI has
 * it (by name or uuid). The captured admin network is the loading DC's own; a name NAPI gives
 * another network gets `-<first 8 of the uuid>`; fabric networks are not made.
 */
import type { Obj } from './format.js';
import type { Outcome } from './load-report.js';
import type { LoadRun } from './load-run.js';
import { isAdminNetwork } from './redact.js';

export async function loadNicTag(run: LoadRun, t: Obj): Promise<Outcome> {
  const name = String(t.name);
  if (await run.exists(`${run.o.urls.napi}/nic_tags/${encodeURIComponent(name)}`)) return 'existing';
  await run.ok('POST', `${run.o.urls.napi}/nic_tags`, { name, ...(typeof t.mtu === 'number' ? { mtu: t.mtu } : {}) });
  return 'created';
}

async function adminNetworkUuid(run: LoadRun): Promise<string> {
  if (!run.adminNetwork) run.adminNetwork = String((await run.ok('GET', `${run.o.urls.napi}/networks/admin`)).uuid);
  return run.adminNetwork;
}

export async function loadNetwork(run: LoadRun, n: Obj): Promise<Outcome> {
  const uuid = String(n.uuid);
  if (isAdminNetwork(n)) {
    run.networks.set(uuid, await adminNetworkUuid(run));
    return 'existing';
  }
  if (await run.exists(`${run.o.urls.napi}/networks/${uuid}`)) {
    run.networks.set(uuid, uuid);
    return 'existing';
  }
  if (n.fabric === true) {
    run.note('fabric networks (and their VMs\' NICs)', uuid);
    return 'skipped';
  }
  const body: Obj = { uuid };
  for (const k of ['name', 'nic_tag', 'vlan_id', 'subnet', 'provision_start_ip', 'provision_end_ip', 'gateway', 'resolvers', 'routes', 'mtu', 'owner_uuids', 'description']) {
    if (n[k] !== undefined && n[k] !== null) body[k] = n[k];
  }
  if (Array.isArray(body.owner_uuids) && body.owner_uuids.length === 0) delete body.owner_uuids;
  if (body.routes && typeof body.routes === 'object' && Object.keys(body.routes).length === 0) delete body.routes;
  const taken = await run.call('GET', `${run.o.urls.napi}/networks?name=${encodeURIComponent(String(n.name))}`);
  if (Array.isArray(taken.body) && taken.body.length > 0) {
    body.name = `${String(n.name)}-${uuid.slice(0, 8)}`;
    run.note('network names taken in the loading DC (loaded as <name>-<uuid prefix>)', `${String(n.name)} → ${String(body.name)}`);
  }
  await run.ok('POST', `${run.o.urls.napi}/networks`, body);
  run.networks.set(uuid, uuid);
  return 'created';
}

export async function loadNetworkPool(run: LoadRun, p: Obj): Promise<Outcome> {
  const uuid = String(p.uuid);
  if (await run.exists(`${run.o.urls.napi}/network_pools/${uuid}`)) return 'existing';
  const networks = (Array.isArray(p.networks) ? p.networks : []).map((u) => run.networks.get(String(u))).filter((u): u is string => u !== undefined);
  if (networks.length === 0) {
    run.note('network pools none of whose networks were loaded', uuid);
    return 'skipped';
  }
  const body: Obj = { uuid, name: p.name, networks: [...new Set(networks)] };
  if (Array.isArray(p.owner_uuids) && p.owner_uuids.length > 0) body.owner_uuids = p.owner_uuids;
  if (typeof p.description === 'string') body.description = p.description;
  const taken = await run.call('GET', `${run.o.urls.napi}/network_pools?name=${encodeURIComponent(String(p.name))}`);
  if (Array.isArray(taken.body) && taken.body.length > 0) {
    body.name = `${String(p.name)}-${uuid.slice(0, 8)}`;
    run.note('network pool names taken in the loading DC (loaded as <name>-<uuid prefix>)', `${String(p.name)} → ${String(body.name)}`);
  }
  await run.ok('POST', `${run.o.urls.napi}/network_pools`, body);
  return 'created';
}
