/**
 * server_update_nics: set the NIC tags (`NIC Names`) of the CN's interfaces, rewrite
 * sysinfo.json durably and have the CN re-read and register it, as the real agent's sysinfo
 * file watcher does. Finishes with `{}` like the real task (sdc-cn-agent
 * lib/backends/smartos/tasks/server_update_nics.js): CNAPI's workflow refreshes the sysinfo
 * itself afterwards.
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask, TaskError } from '../types.js';
import { invalid, isPlainObject } from '../task-support/params.js';
import { readCnSysinfo, reloadSysinfo, writeCnSysinfo } from '../task-support/sysinfo-file.js';

interface NicUpdate {
  mac: string;
  tags?: string[];
}

const NIC_TAG_RE = /^[A-Za-z0-9_]{1,31}$/;

function normalizeMac(mac: string): string {
  return mac
    .toLowerCase()
    .split(':')
    .map((o) => o.padStart(2, '0'))
    .join(':');
}

export const serverUpdateNics = defineTask<{ nics: NicUpdate[] }>({
  name: 'server_update_nics',
  queue: 'server_nic_tasks',
  locks: ['sysinfo'],
  validate: (p) => {
    if (!Array.isArray(p.nics)) throw invalid(p.nics === undefined ? "Missing key 'nics' in params" : 'params.nics must be an array');
    const nics = p.nics.map((n, i): NicUpdate => {
      if (!isPlainObject(n) || typeof n.mac !== 'string' || !/^[0-9a-f]{1,2}(:[0-9a-f]{1,2}){5}$/i.test(n.mac)) {
        throw invalid(`params.nics[${i}] must be an object with a MAC address in "mac"`);
      }
      const tags = n.nic_tags_provided;
      if (tags === undefined || tags === null) return { mac: normalizeMac(n.mac) };
      if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string' && NIC_TAG_RE.test(t))) {
        throw invalid(`params.nics[${i}].nic_tags_provided must be an array of NIC tag names`);
      }
      return { mac: normalizeMac(n.mac), tags: tags as string[] };
    });
    return { nics };
  },
  async run(ctx, p) {
    let changed = false;
    let sysinfo;
    try {
      sysinfo = await readCnSysinfo(ctx.cn);
      const byMac = new Map<string, string>();
      for (const [name, iface] of Object.entries(sysinfo['Network Interfaces'] ?? {})) {
        if (typeof iface?.['MAC Address'] === 'string') byMac.set(normalizeMac(iface['MAC Address']), name);
      }
      for (const nic of p.nics) {
        const name = byMac.get(nic.mac);
        if (!name) {
          ctx.log.warn('no interface with MAC %s on this server', nic.mac);
          continue;
        }
        if (!nic.tags) continue;
        const iface = sysinfo['Network Interfaces'][name]!;
        if (JSON.stringify(iface['NIC Names']) === JSON.stringify(nic.tags)) continue;
        ctx.log.info({ interface: name, old: iface['NIC Names'], new: nic.tags }, 'updating NIC Names');
        iface['NIC Names'] = [...nic.tags];
        changed = true;
      }
      if (changed) await writeCnSysinfo(ctx.cn, sysinfo);
    } catch (err) {
      throw new TaskError(messageOf(err));
    }
    if (changed) await reloadSysinfo(ctx.cn, ctx.log);
    return {};
  },
});
