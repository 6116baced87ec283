/**
 * Reading and rewriting a CN's sysinfo.json from tasks (server_reboot, server_update_nics,
 * recovery_config). Always the file as it is now, never a startup copy (the dummy wrote back
 * a stale one); written durably, 2-space JSON like the original tasks, without the run-time
 * agent address (that is added when sysinfo is read).
 */
import { writeFileDurable } from '../../../common/durable-file.js';
import type { Sysinfo } from '../../../common/sysinfo.js';
import { DAEMON_SYSINFO_KEY, readSysinfoFile, RUNTIME_SYSINFO_KEYS } from '../../../mockcn/sysinfo-file.js';
import { sdcAgentsOf } from '../../../mockcn/sysinfo-keys.js';
import type { MockCn } from '../../../mockcn/types.js';

export function readCnSysinfo(cn: MockCn): Promise<Sysinfo> {
  return readSysinfoFile(cn.paths.sysinfo, cn.uuid);
}

export async function writeCnSysinfo(cn: MockCn, sysinfo: Sysinfo): Promise<void> {
  const copy: Record<string, unknown> = { ...sysinfo };
  for (const key of RUNTIME_SYSINFO_KEYS) delete copy[key];
  if (cn.agents) copy['SDC Agents'] = sdcAgentsOf(cn.agents);
  await writeFileDurable(cn.paths.sysinfo, `${JSON.stringify(copy, null, 2)}\n`);
}

/** sysinfo as the agent reports it: the file, the CN's agents, where this agent listens and which daemon hosts it. */
export function withAgentAddress(sysinfo: Sysinfo, cn: MockCn): Sysinfo {
  const out: Sysinfo = { ...sysinfo };
  if (cn.agents) out['SDC Agents'] = sdcAgentsOf(cn.agents);
  if (cn.agentAddress) {
    out['CN Agent IP'] = cn.agentAddress.ip;
    out['CN Agent Port'] = cn.agentAddress.port;
  }
  if (cn.hostedBy) out[DAEMON_SYSINFO_KEY] = cn.hostedBy;
  return out;
}

/** Have the CN pick up its rewritten sysinfo; the file is already durable, so a failure only logs. */
export async function reloadSysinfo(cn: { reloadSysinfo(): Promise<void> }, log: { warn(...a: unknown[]): void }): Promise<void> {
  try {
    await cn.reloadSysinfo();
  } catch (err) {
    log.warn({ err }, 'sysinfo written but not reloaded');
  }
}
