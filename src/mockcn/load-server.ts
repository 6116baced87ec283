/**
 * Loading one server dir into a MockCn: sysinfo.json (validated), the agents list and the VM
 * store. Anything wrong with the dir is thrown as a MockcloudError naming the problem, so the
 * fleet can log it and skip that server.
 */
import type { SysinfoIdentity } from '../common/sysinfo.js';
import type { VmStore } from '../vmadm/types.js';
import { readAgents } from './agents-dir.js';
import { serverPaths } from './layout.js';
import { MockCnImpl, type MockCnHooks } from './mock-cn.js';
import { readPoolFill } from './pool-fill.js';
import { readSysinfoFile } from './sysinfo-file.js';
import { readProfileName } from './profile-record.js';

/** Opens the VM store of one server (the daemon passes `vmadm.openServer`). */
export type VmStoreOpener = (serverUuid: string, identity: SysinfoIdentity) => Promise<VmStore>;

export async function loadServer(
  dataDir: string,
  uuid: string,
  openVms: VmStoreOpener,
  hooks?: MockCnHooks,
): Promise<MockCnImpl> {
  const paths = serverPaths(dataDir, uuid);
  const sysinfo = await readSysinfoFile(paths.sysinfo, uuid);
  // vms/ may be missing in a hand-made server dir: the VM store creates it when it opens.
  const agents = await readAgents(paths.agents, uuid);
  const vms = await openVms(uuid, {
    UUID: sysinfo.UUID,
    'Datacenter Name': sysinfo['Datacenter Name'],
    'Live Image': sysinfo['Live Image'],
  });
  const profile = await readProfileName(paths.dir, sysinfo);
  const cn = new MockCnImpl({ uuid, paths, vms, sysinfo, agents, profile, ...(hooks ? { hooks } : {}) });
  // A pool a zpool-fill event filled stays filled across restarts.
  const poolFill = await readPoolFill(paths.dir).catch(() => undefined);
  if (poolFill !== undefined) cn.conditions = { poolFill };
  return cn;
}
