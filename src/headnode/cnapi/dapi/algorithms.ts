/**
 * DAPI's plug-ins by the file name allocation descriptions use (sdc-designation
 * lib/algorithms/): hard filters on the server in filters.ts, platform filters in
 * platform-filters.ts, the capacity steps in capacity.ts, locality in locality.ts, scores in
 * scores.ts.
 */
import * as capacity from './capacity.js';
import * as filters from './filters.js';
import * as locality from './locality.js';
import * as platform from './platform-filters.js';
import * as scores from './scores.js';
import type { Plugin } from './types.js';

export * from './types.js';

export const PLUGINS: Record<string, Plugin> = {
  'hard-filter-setup': filters.setup,
  'hard-filter-running': filters.running,
  'hard-filter-os': filters.os,
  'hard-filter-invalid-servers': filters.invalidServers,
  'hard-filter-force-failure': filters.forceFailure,
  'hard-filter-virtual-servers': filters.virtualServers,
  'hard-filter-zpool-encryption': filters.zpoolEncryption,
  'hard-filter-volumes-from': filters.volumesFrom,
  'hard-filter-reserved': filters.reserved,
  'hard-filter-min-free-disk': capacity.minFreeDisk,
  'hard-filter-vlans': filters.vlans,
  'hard-filter-platform-versions': platform.platformVersions,
  'hard-filter-feature-min-platform': platform.featureMinPlatform,
  'hard-filter-traits': filters.traits,
  'hard-filter-headnode': filters.headnode,
  'override-overprovisioning': capacity.overrideOverprovisioning,
  'hard-filter-overprovision-ratios': capacity.overprovisionRatios,
  'load-server-vms': capacity.loadServerVms,
  'calculate-ticketed-vms': capacity.ticketedVms,
  'hard-filter-capness': filters.capness,
  'hard-filter-vm-count': filters.vmCount,
  'hard-filter-hvm': filters.hvm,
  'calculate-server-unreserved': capacity.serverUnreserved,
  'hard-filter-min-ram': capacity.minRam,
  'hard-filter-min-cpu': capacity.minCpu,
  'calculate-affinity': locality.calculateAffinity,
  'hard-filter-locality-hints': locality.hardLocality,
  'hard-filter-owners-servers': filters.ownersServers,
  'hard-filter-reservoir': filters.reservoir,
  identity: filters.identity,
  'hard-filter-large-servers': capacity.largeServers,
  'soft-filter-locality-hints': locality.softLocality,
  'score-unreserved-ram': scores.scoreUnreservedRam,
  'score-unreserved-disk': scores.scoreUnreservedDisk,
  'score-num-owner-zones': scores.scoreNumOwnerZones,
  'score-current-platform': scores.scoreCurrentPlatform,
  'score-next-reboot': scores.scoreNextReboot,
  'score-uniform-random': scores.scoreUniformRandom,
};
