/**
 * DAPI's plug-ins by the file name allocation descriptions use (sdc-designation
 * lib/algorithms/): filters and calculators in filters.ts, scores in scores.ts.
 */
import * as filters from './filters.js';
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
  'hard-filter-min-free-disk': filters.minFreeDisk,
  'hard-filter-vlans': filters.vlans,
  'hard-filter-platform-versions': filters.platformVersions,
  'hard-filter-feature-min-platform': filters.featureMinPlatform,
  'hard-filter-traits': filters.traits,
  'hard-filter-headnode': filters.headnode,
  'override-overprovisioning': filters.overrideOverprovisioning,
  'hard-filter-overprovision-ratios': filters.overprovisionRatios,
  'load-server-vms': filters.loadServerVms,
  'calculate-ticketed-vms': filters.ticketedVms,
  'hard-filter-capness': filters.capness,
  'hard-filter-vm-count': filters.vmCount,
  'hard-filter-hvm': filters.hvm,
  'calculate-server-unreserved': filters.serverUnreserved,
  'hard-filter-min-ram': filters.minRam,
  'hard-filter-min-cpu': filters.minCpu,
  'calculate-affinity': filters.calculateAffinity,
  'hard-filter-locality-hints': filters.hardLocality,
  'hard-filter-owners-servers': filters.ownersServers,
  'hard-filter-reservoir': filters.reservoir,
  identity: filters.identity,
  'hard-filter-large-servers': filters.largeServers,
  'soft-filter-locality-hints': filters.softLocality,
  'score-unreserved-ram': scores.scoreUnreservedRam,
  'score-unreserved-disk': scores.scoreUnreservedDisk,
  'score-num-owner-zones': scores.scoreNumOwnerZones,
  'score-current-platform': scores.scoreCurrentPlatform,
  'score-next-reboot': scores.scoreNextReboot,
  'score-uniform-random': scores.scoreUniformRandom,
};
