/**
 * What a real Triton CN shows, written out by hand from the upstream sources, as the oracle
 * the sysinfo and agents tests compare mockcloud's CNs with.
 */

/** The keys smartos-live src/sysinfo's output_json prints in a Triton CN's global zone, in order. */
export const REAL_SYSINFO_KEYS = [
  'Live Image', 'System Type', 'Boot Time', 'Datacenter Name', 'SDC Version', 'Manufacturer', 'Product',
  'Serial Number', 'SKU Number', 'HW Version', 'HW Family', 'Setup', 'VM Capable', 'Bhyve Capable',
  'Bhyve Max Vcpus', 'HVM API', 'CPU Type', 'CPU Virtualization', 'CPU Physical Cores', 'Admin NIC Tag', 'Admin IP',
  'UUID', 'Hostname', 'CPU Total Cores', 'CPU Socket Count', 'CPU Core Count', 'CPU Online Count', 'CPU Count',
  'MiB of Memory', 'Zpool', 'Zpool Encrypted', 'Zpool Disks', 'Zpool Profile', 'Zpool Creation', 'Zpool Size in GiB',
  'Zpool Recovery', 'Disks', 'Boot Parameters', 'Psrinfo', 'SDC Agents', 'Network Interfaces',
  'Virtual Network Interfaces', 'Link Aggregations',
];

/**
 * The agents a Triton CN runs out of /opt/smartdc/agents (sdcadm lib/steps/sapi.js
 * ensureAgentServices, less agents_core), by name.
 */
export const REAL_AGENTS = [
  'amon-agent', 'amon-relay', 'cmon-agent', 'cn-agent', 'config-agent', 'firewaller', 'hagfish-watcher', 'net-agent',
  'smartlogin', 'vm-agent',
];
