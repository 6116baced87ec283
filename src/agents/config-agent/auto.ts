/**
 * `auto.*`: what the GZ config-agent learns itself and puts beside the SAPI metadata
 * (sdc-config-agent agent.js setGlobalZoneAutoMetadata, processGZNicTags, setNicTag;
 * README "auto.* variables"): SERVER_UUID and DATACENTER_NAME from sysinfo, ZONENAME
 * `global`, INSTANCE_UUID per instance, and `<TAG>_IP` / `<TAG>_IPS` for the NIC tags with an
 * address: the admin tag on a physical NIC, others on the VNIC named after the tag
 * (`<tag><N>`) over the physical NIC carrying that tag. A `<tag>_rack_<id>` tag counts as
 * `<tag>`.
 */
import type { Sysinfo } from '../../common/sysinfo.js';

const VNIC_NAME_RE = /^([a-zA-Z0-9_]{0,31})[0-9]+$/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function gzAutoMetadata(sysinfo: Sysinfo): Record<string, unknown> {
  const auto: Record<string, unknown> = {
    SERVER_UUID: sysinfo.UUID,
    DATACENTER_NAME: sysinfo['Datacenter Name'],
    ZONENAME: 'global',
  };
  const setNicTag = (nicTag: string, ipWithMask: string): void => {
    let tag = nicTag.toUpperCase();
    if (/^[A-Z]+_RACK_[A-Z0-9_-]+$/.test(tag)) tag = tag.split('_')[0]!;
    const ip = ipWithMask.split('/')[0]!;
    auto[`${tag}_IP`] = ip;
    const list = (auto[`${tag}_IPS`] ??= []) as string[];
    if (!list.includes(ip)) list.push(ip);
  };
  const pnics = isRecord(sysinfo['Network Interfaces']) ? sysinfo['Network Interfaces'] : {};
  const tagOwner = new Map<string, string>();
  for (const [name, pnic] of Object.entries(pnics)) {
    if (!isRecord(pnic)) continue;
    const names = Array.isArray(pnic['NIC Names']) ? pnic['NIC Names'] : [];
    for (const tag of names) {
      if (typeof tag !== 'string') continue;
      tagOwner.set(tag, name);
      const ip = pnic.ip4addr;
      if (typeof ip === 'string' && ip !== '' && (tag === 'admin' || tag.startsWith('admin_'))) setNicTag(tag, ip);
    }
  }
  const vnics = isRecord(sysinfo['Virtual Network Interfaces']) ? sysinfo['Virtual Network Interfaces'] : {};
  for (const [name, vnic] of Object.entries(vnics)) {
    const m = VNIC_NAME_RE.exec(name);
    if (!m || !isRecord(vnic)) continue;
    const ip = vnic.ip4addr;
    if (typeof ip !== 'string' || ip === '') continue;
    if (tagOwner.get(m[1]!) !== vnic['Host Interface']) continue;
    setNicTag(m[1]!, ip);
  }
  return auto;
}
