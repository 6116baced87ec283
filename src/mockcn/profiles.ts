/**
 * Hardware profiles: what a mock CN's sysinfo says about its hardware, and where DAPI may place
 * VMs on it. `virtual` is the original mockcloud template (cn-agent-spec §5.3) and the default;
 * the other built-ins give a fleet some variety for placement (DAPI) tests, and profile files
 * add more (profile-files.ts). A profile is chosen per CN at creation and lives on in that CN's
 * sysinfo.json (and its name in profile.json); the table is not consulted again after creation.
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
  /** sysinfo "VM Capable" (KVM: the CPU has vmx/svm); absent = true. */
  vmCapable?: boolean;
  /** sysinfo "Bhyve Capable"; absent = true. */
  bhyveCapable?: boolean;
  /**
   * NIC tags of the NICs beside the admin one (dnet1, dnet2, ...); absent = one untagged NIC
   * (dnet1). The daemon's external-nics setting adds `external` to dnet1 as before.
   */
  nics?: { tags: string[] }[];
  /** Where DAPI may place VMs on CNs of this profile (CNAPI ServerUpdate fields). */
  placement?: Placement;
  /**
   * A headnode-like CN: booted with `headnode=true`, so CNAPI marks it a headnode and DAPI's
   * hard-filter-headnode never places a VM on it. Not the dev DC's headnode server.
   */
  headnode?: boolean;
  /**
   * The timing of CNs of this profile (docs/timing.md): a built-in timing profile's name, or a
   * timing file (relative to the profiles dir); absent: the daemon's.
   */
  timing?: string;
  /** Where a profile file defined it ("file:line"); absent for the built-ins. */
  source?: string;
}

/**
 * The per-CN fields DAPI reads from CNAPI, as an operator sets them with `sdc-server update`
 * (CNAPI POST /servers/:uuid, sdc-cnapi lib/endpoints/servers.js ServerUpdate).
 */
export interface Placement {
  traits?: Record<string, unknown>;
  reserved?: boolean;
  reservoir?: boolean;
  /** Keys cpu, ram, disk, io, net; numbers ≥ 0. */
  overprovisionRatios?: Partial<Record<OverprovisionKey, number>>;
}

export const OVERPROVISION_KEYS = ['cpu', 'ram', 'disk', 'io', 'net'] as const;
export type OverprovisionKey = (typeof OVERPROVISION_KEYS)[number];

/** Whether a placement sets anything. */
export function hasPlacement(p: Placement | undefined): p is Placement {
  return p !== undefined && Object.values(p).some((v) => v !== undefined);
}

/** A placement as CNAPI's ServerUpdate takes it. */
export function placementBody(p: Placement): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (p.traits !== undefined) body.traits = p.traits;
  if (p.reserved !== undefined) body.reserved = p.reserved;
  if (p.reservoir !== undefined) body.reservoir = p.reservoir;
  if (p.overprovisionRatios !== undefined) body.overprovision_ratios = p.overprovisionRatios;
  return body;
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

const STORAGE: HardwareProfile = {
  ...VIRTUAL,
  name: 'storage',
  description: 'a storage box: 1 socket, 8 cores, 16 threads, 128 GiB, 36 x 8000 GB disks, traits {storage: true}',
  product: 'Joyent-Virtual-CN-0004',
  cpuType: 'Intel(R) Xeon(R) Silver 4208 CPU @ 2.10GHz',
  cpuPhysicalCores: 1,
  cpuCoreCount: 8,
  cpuTotalCores: 16,
  bhyveMaxVcpus: 16,
  memoryMiB: 130942,
  diskCount: 36,
  diskSizeGB: 8000,
  zpoolProfile: 'raidz2',
  zpoolSizeGiB: 228000,
  // Only VMs asking for the trait land here (DAPI hard-filter-traits), as on a real storage rack.
  placement: { traits: { storage: true } },
};

export const DEFAULT_PROFILE = 'virtual';

export const PROFILES: ReadonlyMap<string, HardwareProfile> = new Map(
  [VIRTUAL, SMALL, LARGE, STORAGE].map((p) => [p.name, p]),
);

/** A built-in profile by name; unknown names are the caller's mistake (409 InvalidArgument). */
export function getProfile(name: string | undefined): HardwareProfile {
  return lookupProfile(PROFILES, name);
}

function lookupProfile(table: ReadonlyMap<string, HardwareProfile>, name: string | undefined): HardwareProfile {
  const profile = table.get(name ?? DEFAULT_PROFILE);
  if (!profile) {
    throw new MockcloudError(
      'InvalidArgument',
      `unknown hardware profile ${JSON.stringify(name)}; known: ${[...table.keys()].join(', ')}`,
    );
  }
  return profile;
}

/** The profiles a daemon offers: the built-ins, then those of its profile files (which may replace one). */
export class ProfileCatalogue {
  private readonly table: Map<string, HardwareProfile>;

  constructor(extra: readonly HardwareProfile[] = []) {
    this.table = new Map(PROFILES);
    for (const p of extra) this.table.set(p.name, p);
  }

  get(name: string | undefined): HardwareProfile {
    return lookupProfile(this.table, name);
  }

  has(name: string): boolean {
    return this.table.has(name);
  }

  list(): HardwareProfile[] {
    return [...this.table.values()];
  }
}

/**
 * The profile a CN made before profiles were recorded (no profile.json) was made with: the
 * built-in whose sysinfo "Product" it carries, else the default.
 */
export function profileOfProduct(product: unknown): string {
  for (const p of PROFILES.values()) if (p.product === product) return p.name;
  return DEFAULT_PROFILE;
}
