/**
 * Hardware profiles: what a mock CN's sysinfo says about its hardware. `virtual` is the
 * original mockcloud template (cn-agent-spec §5.3) and the default; the others give a fleet
 * some variety for placement (DAPI) tests. A profile is chosen per CN at creation and lives on
 * in that CN's sysinfo.json; the profile table is not consulted again after creation.
 */
import { MockcloudError } from '../common/errors.js';

export interface HardwareProfile {
  name: string;
  description: string;
  manufacturer: string;
  product: string;
  skuNumber: string;
  hwVersion: string;
  hwFamily: string;
  cpuType: string;
  cpuVirtualization: string;
  /** Sockets: sysinfo "CPU Socket Count" and its legacy name "CPU Physical Cores". */
  cpuPhysicalCores: number;
  /** Physical cores over all sockets: sysinfo "CPU Core Count". */
  cpuCoreCount: number;
  /**
   * Hardware threads, all online: sysinfo "CPU Count", "CPU Online Count" and the legacy
   * "CPU Total Cores". Twice the cores: every profile's CPU runs two threads per core (SMT on).
   */
  cpuTotalCores: number;
  bhyveMaxVcpus: number;
  /** sysinfo "MiB of Memory" (a string in sysinfo). */
  memoryMiB: number;
  diskCount: number;
  diskSizeGB: number;
  zpoolProfile: string;
  zpoolSizeGiB: number;
  /** sysinfo "Live Image"; absent = the daemon's platform (see config `platform`). */
  platform?: string;
}

const VIRTUAL: HardwareProfile = {
  name: 'virtual',
  description: 'the original mockcloud template: 2 sockets, 16 cores, 32 threads, 256 GiB, 16 x 600 GB disks',
  manufacturer: 'Joyent',
  product: 'Joyent-Virtual-CN-0001',
  skuNumber: '90210 rev 42',
  hwVersion: '1.0',
  hwFamily: 'JXX-0001',
  cpuType: 'Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz',
  cpuVirtualization: 'vmx',
  cpuPhysicalCores: 2,
  cpuCoreCount: 16,
  cpuTotalCores: 32,
  bhyveMaxVcpus: 32,
  memoryMiB: 262111,
  diskCount: 16,
  diskSizeGB: 600,
  zpoolProfile: 'mirror',
  zpoolSizeGiB: 3770,
};

const SMALL: HardwareProfile = {
  ...VIRTUAL,
  name: 'small',
  description: 'a small box: 1 socket, 4 cores, 8 threads, 32 GiB, 4 x 480 GB disks',
  product: 'Joyent-Virtual-CN-0002',
  // A 4-core, 8-thread part, so the CPU counts in sysinfo fit the model named.
  cpuType: 'Intel(R) Xeon(R) E-2134 CPU @ 3.50GHz',
  cpuPhysicalCores: 1,
  cpuCoreCount: 4,
  cpuTotalCores: 8,
  bhyveMaxVcpus: 8,
  memoryMiB: 32625,
  diskCount: 4,
  diskSizeGB: 480,
  zpoolProfile: 'mirror',
  zpoolSizeGiB: 860,
};

const LARGE: HardwareProfile = {
  ...VIRTUAL,
  name: 'large',
  description: 'a large box: 2 sockets, 48 cores, 96 threads, 1 TiB, 24 x 1920 GB disks',
  product: 'Joyent-Virtual-CN-0003',
  cpuType: 'Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz',
  cpuPhysicalCores: 2,
  cpuCoreCount: 48,
  cpuTotalCores: 96,
  bhyveMaxVcpus: 32,
  memoryMiB: 1048286,
  diskCount: 24,
  diskSizeGB: 1920,
  zpoolProfile: 'raidz2',
  zpoolSizeGiB: 34450,
};

export const DEFAULT_PROFILE = 'virtual';

export const PROFILES: ReadonlyMap<string, HardwareProfile> = new Map(
  [VIRTUAL, SMALL, LARGE].map((p) => [p.name, p]),
);

/** A profile by name; unknown names are the caller's mistake (409 InvalidArgument). */
export function getProfile(name: string | undefined): HardwareProfile {
  const profile = PROFILES.get(name ?? DEFAULT_PROFILE);
  if (!profile) {
    throw new MockcloudError(
      'InvalidArgument',
      `unknown hardware profile ${JSON.stringify(name)}; known: ${[...PROFILES.keys()].join(', ')}`,
    );
  }
  return profile;
}
