/**
 * machine_update_nics (the smartos task): move every VM's NICs on one network to its new
 * gateway, resolvers and routes.
 */
import { messageOf } from '../../../common/errors.js';
import { broadcastAddress, parseIpv4 } from '../../../common/ipv4.js';
import type { Vm, VmNic } from '../../../vmadm/types.js';
import { defineTask, TaskError, type TaskParams } from '../types.js';
import { isPlainObject, optUuidParam } from '../task-support/params.js';
import { loadVm, restCodeOf } from '../vmadm-bridge/vm-common.js';

interface Network {
  uuid?: unknown;
  subnet: string;
  netmask?: unknown;
  vlan_id?: unknown;
  nic_tag?: unknown;
  gateway?: unknown;
  resolvers?: unknown;
  routes?: unknown;
  start: number;
  end: number;
}

/** A network with its address range, or undefined when its subnet is unusable. */
function withRange(raw: unknown): Network | undefined {
  if (!isPlainObject(raw) || typeof raw.subnet !== 'string') return undefined;
  const [base, bits] = raw.subnet.split('/');
  const start = parseIpv4(base);
  const n = Number(bits);
  if (start === undefined || !Number.isInteger(n) || n < 0 || n > 32) return undefined;
  return { ...(raw as Omit<Network, 'start' | 'end'>), subnet: raw.subnet, start, end: broadcastAddress({ start, bits: n }) };
}

function onNetwork(net: Network, nic: VmNic, ipNum: number): boolean {
  return (
    Number(net.vlan_id ?? 0) === Number(nic.vlan_id ?? 0) &&
    net.start <= ipNum &&
    ipNum < net.end &&
    nic.netmask === net.netmask
  );
}

/** set_routes / remove_routes moving `oldRoutes` to `newRoutes`. */
function routeChanges(oldRoutes: Record<string, string>, newRoutes: Record<string, string>): TaskParams {
  const out: TaskParams = {};
  const haveOld = Object.keys(oldRoutes).length > 0;
  const haveNew = Object.keys(newRoutes).length > 0;
  if (!haveOld && !haveNew) return out;
  if (!haveOld) return { set_routes: newRoutes };
  if (!haveNew) return { remove_routes: Object.keys(oldRoutes) };
  const remove = Object.keys(oldRoutes).filter((r) => !(r in newRoutes));
  out.set_routes = newRoutes;
  if (remove.length > 0) out.remove_routes = remove;
  return out;
}

interface NicsUpdate {
  uuid: string;
  params: TaskParams;
}

function planUpdates(vms: readonly Vm[], orig: Network, networks: Network[]): NicsUpdate[] {
  const updates: NicsUpdate[] = [];
  for (const vm of vms) {
    const nics = vm.nics ?? [];
    if (!nics.some((n) => (orig.nic_tag === undefined || n.nic_tag === orig.nic_tag) && n.netmask === orig.netmask)) {
      continue;
    }
    let matched = false;
    const setResolvers = !(isPlainObject(vm.internal_metadata) && vm.internal_metadata.set_resolvers === false);
    const resolvers: string[] = [];
    const newRoutes: Record<string, string> = {};
    const updateNics: { mac: string; gateway: unknown }[] = [];
    for (const nic of nics) {
      const ipNum = parseIpv4(nic.ip);
      if (ipNum === undefined) continue;
      const onOrig = onNetwork(orig, nic, ipNum);
      if (onOrig) matched = true;
      for (const net of networks) {
        if (!onNetwork(net, nic, ipNum)) continue;
        if (onOrig && net.gateway !== undefined && net.gateway !== nic.gateway) {
          updateNics.push({ mac: nic.mac, gateway: net.gateway });
        }
        if (Array.isArray(net.resolvers)) {
          for (const r of net.resolvers) if (typeof r === 'string' && !resolvers.includes(r)) resolvers.push(r);
        }
        if (isPlainObject(net.routes)) {
          for (const [dst, gw] of Object.entries(net.routes)) if (typeof gw === 'string') newRoutes[dst] = gw;
        }
      }
    }
    if (!matched) continue;
    const params: TaskParams = {};
    if (updateNics.length > 0) params.update_nics = updateNics;
    if (setResolvers) params.resolvers = resolvers;
    Object.assign(params, routeChanges((vm.routes as Record<string, string> | undefined) ?? {}, newRoutes));
    if (Object.keys(params).length > 0) updates.push({ uuid: vm.uuid, params });
  }
  return updates;
}

interface UpdateNicsParams {
  uuid?: string;
}

export const machineUpdateNics = defineTask<UpdateNicsParams>({
  name: 'machine_update_nics',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => {
    const uuid = optUuidParam(p, 'uuid');
    return uuid ? { uuid } : {};
  },
  async run(ctx, p) {
    const raw = ctx.rawParams;
    const { orig, networks } = await ctx.step('pre_check', 'Pre-flight sanity check', 20, async () => {
      const bad: string[] = [];
      const nets: Network[] = [];
      if (!Array.isArray(raw.networks) || raw.networks.length === 0) bad.push('networks');
      else {
        for (const n of raw.networks) {
          const withR = withRange(n);
          if (withR) nets.push(withR);
          else bad.push(`networks (${String(isPlainObject(n) ? n.uuid : n)})`);
        }
      }
      const o = withRange(raw.original_network);
      if (!o) bad.push('original_network');
      if (bad.length > 0) {
        throw new TaskError(`Invalid request parameter${bad.length === 1 ? '' : 's'}: ${bad.join(', ')}`);
      }
      return { orig: o!, networks: nets };
    });
    const updates = await ctx.step('filter_vms', 'Filtering VMs', 50, async () => {
      const planned = planUpdates(ctx.cn.vms.list(), orig, networks);
      ctx.log.info({ updates: planned }, '%d VMs to update', planned.length);
      return planned;
    });
    await ctx.step('perform_updates', 'Updating VMs', 100, async () => {
      for (const u of updates) {
        await ctx.withVmLock(u.uuid, async () => {
          try {
            await ctx.cn.vms.update(u.uuid, u.params);
          } catch (err) {
            const restCode = restCodeOf(err);
            throw new TaskError(`Error updating VM "${u.uuid}": ${messageOf(err)}`, restCode ? { restCode } : undefined);
          }
        });
        ctx.log.info(`Updated VM "${u.uuid}"`);
      }
    });
    // CNAPI's route names no VM; the real task then failed loading "undefined".
    return p.uuid ? { vm: await loadVm(ctx, p.uuid) } : {};
  },
});
