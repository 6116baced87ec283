/**
 * `sysinfo`: the CN's sysinfo as JSON (no options, or -f), as `key='value'` lines (-p), or
 * nothing (-u), as smartos-live's src/sysinfo prints them for a global zone.
 */
import { fail, ok, type CommandResult, type GzSnapshot } from './types.js';

export function sysinfo(snapshot: GzSnapshot, args: string[]): CommandResult {
  let parsable = false;
  let updateOnly = false;
  for (const arg of args) {
    if (!/^-[fnpu]+$/.test(arg)) return fail('Usage: /usr/bin/sysinfo: [-f] [-p] [-u]', 2);
    if (arg.includes('p')) parsable = true;
    if (arg.includes('u')) updateOnly = true;
  }
  if (updateOnly) return ok('');
  if (!parsable) return ok(`${JSON.stringify(snapshot.sysinfo, null, 2)}\n`);
  return ok(parsableLines(snapshot.sysinfo).map((l) => `${l}\n`).join(''));
}

function parsableLines(si: Record<string, unknown>): string[] {
  const str = (key: string): string => {
    const v = si[key];
    return v === undefined || v === null ? '' : String(v);
  };
  const quoted = (name: string, key: string): string => `${name}='${str(key)}'`;
  const bare = (name: string, key: string): string => `${name}=${str(key)}`;
  const lines = [quoted('Live_Image', 'Live Image'), quoted('System_Type', 'System Type'), quoted('Boot_Time', 'Boot Time')];
  if (str('Datacenter Name')) lines.push(quoted('Datacenter_Name', 'Datacenter Name'));
  if (str('Headnode ID')) lines.push(bare('Headnode_ID', 'Headnode ID'));
  if (str('SDC Version')) lines.push(quoted('SDC_Version', 'SDC Version'));

  const nics = objectOf(si['Network Interfaces']);
  const tags = new Map<string, string>();
  for (const [iface, nic] of Object.entries(nics)) {
    for (const tag of arrayOf(objectOf(nic)['NIC Names'])) if (!tags.has(String(tag))) tags.set(String(tag), iface);
  }
  lines.push(
    quoted('Manufacturer', 'Manufacturer'),
    quoted('Product', 'Product'),
    quoted('Serial_Number', 'Serial Number'),
    quoted('SKU_Number', 'SKU Number'),
    quoted('HW_Version', 'HW Version'),
    quoted('HW_Family', 'HW Family'),
    quoted('VM_Capable', 'VM Capable'),
    quoted('CPU_Type', 'CPU Type'),
    quoted('CPU_Virtualization', 'CPU Virtualization'),
    bare('CPU_Physical_Cores', 'CPU Physical Cores'),
    quoted('Bhyve_Capable', 'Bhyve Capable'),
    bare('Bhyve_Max_Vcpus', 'Bhyve Max Vcpus'),
    quoted('HVM_API', 'HVM API'),
    `Nic_Tags=${[...tags.keys()].join(',')}`,
    bare('Admin_NIC_Tag', 'Admin NIC Tag'),
    bare('Admin_IP', 'Admin IP'),
    quoted('Setup', 'Setup'),
    quoted('UUID', 'UUID'),
    quoted('Hostname', 'Hostname'),
    bare('CPU_Total_Cores', 'CPU Total Cores'),
    bare('CPU_Socket_Count', 'CPU Socket Count'),
    bare('CPU_Core_Count', 'CPU Core Count'),
    bare('CPU_Online_Count', 'CPU Online Count'),
    bare('CPU_Count', 'CPU Count'),
    bare('MiB_of_Memory', 'MiB of Memory'),
  );
  for (const [disk, d] of Object.entries(objectOf(si.Disks))) lines.push(`Disk_${disk}_size_in_GB=${String(objectOf(d)['Size in GB'] ?? '')}`);
  for (const [tag, iface] of tags) lines.push(`NIC_${tag}='${iface}'`);
  for (const [iface, nicValue] of Object.entries(nics)) {
    const nic = objectOf(nicValue);
    const base = `Network_Interface_${iface}`;
    lines.push(
      `${base}_MAC_Address='${String(nic['MAC Address'] ?? '')}'`,
      `${base}_IPv4_Address='${String(nic.ip4addr ?? '')}'`,
      `${base}_NIC_Names='${arrayOf(nic['NIC Names']).join(',')}'`,
      `${base}_Link_Status='${String(nic['Link Status'] ?? 'unknown')}'`,
    );
  }
  for (const [iface, vnicValue] of Object.entries(objectOf(si['Virtual Network Interfaces']))) {
    const vnic = objectOf(vnicValue);
    const base = `Virtual_Network_Interface_${iface}`;
    lines.push(
      `${base}_MAC_Address='${String(vnic['MAC Address'] ?? '')}'`,
      `${base}_IPv4_Address='${String(vnic.ip4addr ?? '')}'`,
      `${base}_Link_Status='${String(vnic['Link Status'] ?? '')}'`,
      `${base}_VLAN='${String(vnic.VLAN ?? '')}'`,
      `${base}_Host_Interface='${String(vnic['Host Interface'] ?? '')}'`,
    );
  }
  for (const [key, value] of Object.entries(objectOf(si['Boot Parameters']))) {
    lines.push(`Bootparam_${key.replace(/[^A-Za-z0-9_]/g, '_')}='${String(value)}'`);
  }
  return lines;
}

function objectOf(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function arrayOf(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
