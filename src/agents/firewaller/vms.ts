/**
 * VMs as firewaller sees them: the CN's own (uuid, owner, whether its firewall is enabled,
 * tags, IPs: what fw.js takes) and remote VMs as it stores them from VMAPI and updates them
 * from FWAPI's `vm.*` messages (sdc-firewaller-agent lib/vmapi.js, lib/tasks/vm-update.js).
 */
import type { MockCn } from '../../mockcn/types.js';
import type { Vm } from '../../vmadm/types.js';
import type { FwVm, RemoteVm } from './rules.js';

export function fwVm(vm: Vm): FwVm {
  return {
    uuid: vm.uuid,
    ...(typeof vm.owner_uuid === 'string' ? { owner_uuid: vm.owner_uuid } : {}),
    enabled: vm.firewall_enabled === true,
    tags: (vm.tags as Record<string, unknown> | undefined) ?? {},
    ips: ipsOf(vm),
    ...(typeof vm.state === 'string' ? { state: vm.state } : {}),
  };
}

export function localVms(cn: MockCn): FwVm[] {
  return cn.vms.list().map(fwVm);
}

export function ipsOf(vm: Record<string, unknown>): string[] {
  const ips = new Set<string>();
  for (const n of Array.isArray(vm.nics) ? (vm.nics as Record<string, unknown>[]) : []) {
    if (typeof n?.ip === 'string' && n.ip !== 'dhcp' && n.ip !== '') ips.add(n.ip);
  }
  for (const ip of Array.isArray(vm.ips) ? vm.ips : []) if (typeof ip === 'string') ips.add(ip.split('/')[0]!);
  return [...ips].sort();
}

/** vmapi.js buildRVM / fw rvm.js: uuid, sorted IPs, owner, tags when there are any. */
export function rvmFromVm(vm: Record<string, unknown>): RemoteVm {
  const rvm: RemoteVm = { uuid: String(vm.uuid), ips: ipsOf(vm) };
  if (typeof vm.owner_uuid === 'string') rvm.owner_uuid = vm.owner_uuid;
  const tags = vm.tags as Record<string, unknown> | undefined;
  if (tags && typeof tags === 'object' && Object.keys(tags).length > 0) rvm.tags = { ...tags };
  return rvm;
}

/** vm-update.js fillRVM: add_nics, remove_ips, set_tags, remove_tags on a stored remote VM. */
export function fillRvm(value: Record<string, unknown>, rvm: RemoteVm): RemoteVm {
  const out: RemoteVm = { ...rvm, ips: [...rvm.ips], ...(rvm.tags ? { tags: { ...rvm.tags } } : {}) };
  if (Array.isArray(value.add_nics)) out.ips = [...new Set([...out.ips, ...ipsOf({ nics: value.add_nics })])].sort();
  if (Array.isArray(value.remove_ips)) out.ips = out.ips.filter((ip) => !(value.remove_ips as unknown[]).includes(ip));
  if (value.set_tags && typeof value.set_tags === 'object') out.tags = { ...out.tags, ...(value.set_tags as Record<string, unknown>) };
  if (Array.isArray(value.remove_tags) && out.tags) for (const t of value.remove_tags) delete out.tags[String(t)];
  if (value.tags && typeof value.tags === 'object' && !Array.isArray(value.tags)) out.tags = { ...(value.tags as Record<string, unknown>) };
  if (out.tags && Object.keys(out.tags).length === 0) delete out.tags;
  return out;
}
