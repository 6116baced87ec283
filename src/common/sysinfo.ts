/**
 * SmartOS sysinfo as a mock CN reports it: every key the global zone's `sysinfo` prints on a
 * Triton CN (smartos-live src/sysinfo, `output_json`), spaces and all; consumers (CNAPI,
 * triton-netconfig, net-agent, sdcadm) read them by name. Plus the two mockcloud keys that say
 * where the CN's agents listen.
 */

export interface SysinfoNetworkInterface {
  'MAC Address': string;
  ip4addr: string;
  'Link Status': 'up' | 'down' | 'unknown';
  'NIC Names': string[];
}

export interface SysinfoDisk {
  'Size in GB': number;
}

/** One entry of "SDC Agents": what `json -a name version` makes of an agent's package.json. */
export interface SdcAgent {
  name: string;
  version?: string;
}

export interface Sysinfo {
  'Live Image': string;
  /** `uname -s` on a real CN ("SunOS"); "Virtual" is the one mark of a mock CN. */
  'System Type': string;
  /** Epoch seconds, a string as the real script prints it. */
  'Boot Time': string;
  'Datacenter Name': string;
  'SDC Version': string;
  Manufacturer: string;
  Product: string;
  'Serial Number': string;
  'SKU Number': string;
  'HW Version': string;
  'HW Family': string;
  Setup: string | boolean;
  'VM Capable': boolean;
  'Bhyve Capable': boolean;
  'Bhyve Max Vcpus': number;
  /** True where bhyve works (bhhwcompat), like "Bhyve Capable". */
  'HVM API': boolean;
  'CPU Type': string;
  'CPU Virtualization': string;
  /** Legacy name: the number of sockets ("CPU Socket Count"). */
  'CPU Physical Cores': number;
  'Admin NIC Tag': string;
  'Admin IP'?: string;
  UUID: string;
  Hostname: string;
  /** Legacy name: every hardware thread ("CPU Count"). */
  'CPU Total Cores': number;
  'CPU Socket Count': number;
  'CPU Core Count': number;
  'CPU Online Count': number;
  'CPU Count': number;
  'MiB of Memory': string;
  Zpool: string;
  'Zpool Encrypted': boolean;
  'Zpool Disks': string;
  'Zpool Profile': string;
  'Zpool Creation': number;
  'Zpool Size in GiB': number;
  /** `{}` unless the pool is encrypted and has recovery configurations (`active`, `staged`). */
  'Zpool Recovery': Record<string, unknown>;
  Disks: Record<string, SysinfoDisk>;
  'Boot Parameters': Record<string, string>;
  /** `psrinfo -r all`: `{"smt_enabled": "true"}`. */
  Psrinfo: Record<string, string>;
  /** The agents under /opt/smartdc/agents, name and version (deprecated by RFD 82, still printed). */
  'SDC Agents': SdcAgent[];
  'Network Interfaces': Record<string, SysinfoNetworkInterface>;
  'Virtual Network Interfaces': Record<string, unknown>;
  'Link Aggregations': Record<string, unknown>;
  /** Where CNAPI and CMON reach this mock CN's agents; added at run time, never trusted from disk. */
  'CN Agent IP'?: string;
  'CN Agent Port'?: number;
  /** The mockcloud daemon hosting this CN ("<daemon id>@<host>"); added at run time. */
  'Mockcloud Daemon'?: string;
  [key: string]: unknown;
}

/** What vmadm needs of sysinfo to fill in a VM's derived fields. */
export type SysinfoIdentity = Pick<Sysinfo, 'UUID' | 'Datacenter Name' | 'Live Image'>;
