/**
 * SmartOS sysinfo as a mock CN reports it (reference cn-agent-spec §5.3). Keys are the
 * real ones, spaces and all; consumers (CNAPI, triton-netconfig, net-agent) read them by name.
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

export interface Sysinfo {
  'System Type': string;
  'SDC Version': string;
  Manufacturer: string;
  Product: string;
  'SKU Number': string;
  'HW Version': string;
  'HW Family': string;
  Setup: string | boolean;
  'VM Capable': boolean;
  'Bhyve Capable': boolean;
  'Bhyve Max Vcpus': number;
  'CPU Type': string;
  'CPU Virtualization': string;
  'CPU Physical Cores': number;
  'CPU Total Cores': number;
  'MiB of Memory': string;
  Zpool: string;
  'Zpool Disks': string;
  'Zpool Profile': string;
  'Zpool Size in GiB': number;
  'Zpool Creation': number;
  Disks: Record<string, SysinfoDisk>;
  'Boot Parameters': Record<string, string>;
  'SDC Agents'?: unknown[];
  'Network Interfaces': Record<string, SysinfoNetworkInterface>;
  'Virtual Network Interfaces': Record<string, unknown>;
  'Link Aggregations': Record<string, unknown>;
  'Datacenter Name': string;
  UUID: string;
  'Admin IP'?: string;
  'Admin NIC Tag'?: string;
  'Live Image': string;
  'Boot Time': string;
  Hostname: string;
  'Serial Number': string;
  /** Where CNAPI and CMON reach this mock CN's agents; added at run time, never trusted from disk. */
  'CN Agent IP'?: string;
  'CN Agent Port'?: number;
  /** The mockcloud daemon hosting this CN ("<daemon id>@<host>"); added at run time. */
  'Mockcloud Daemon'?: string;
  'Zpool Encrypted'?: boolean;
  'Zpool Recovery'?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What vmadm needs of sysinfo to fill in a VM's derived fields. */
export type SysinfoIdentity = Pick<Sysinfo, 'UUID' | 'Datacenter Name' | 'Live Image'>;
