/**
 * `vmadm info` and `vmadm sysrq`. Only hardware VMs have runtime info (kvm: qemu's
 * monitor types; bhyve: vnc) and sysrq; the answers are plausible mock values derived
 * from the VM, and the refusals carry vmadm's messages.
 */
import { badState, unsupported, invalidValue } from './errors.js';
import type { Vm } from './types.js';

const INFO_TYPES: Readonly<Record<string, readonly string[]>> = {
  kvm: ['all', 'block', 'blockstats', 'chardev', 'cpus', 'kvm', 'pci', 'spice', 'status', 'version', 'vnc'],
  bhyve: ['all', 'vnc'],
};

const SYSRQ_TYPES: Readonly<Record<string, readonly string[]>> = {
  kvm: ['nmi', 'screenshot'],
  bhyve: ['nmi'],
};

function checkRunning(vm: Vm, what: string): void {
  if (vm.state !== 'running' && vm.state !== 'stopping') {
    throw badState(`${what} from state "${String(vm.state)}", must be "running" or "stopping".`);
  }
}

/** A stable per-VM display number, so the VNC port stays put across calls. */
function displayOf(vm: Vm): number {
  const n = parseInt(vm.uuid.replace(/-/g, '').slice(0, 6), 16);
  return n % 1000;
}

export interface InfoOptions {
  /** The address vmadmd's VNC listeners bind (the CN's admin IP); 127.0.0.1 when not given. */
  host?: string | undefined;
}

/**
 * vmadmd's VNC answer (smartos-live vmadmd.js infoVNC): `vnc_port` when set (-1: no
 * listener, an empty object), else a port of its own; `display` for ports from 5900;
 * the password when the VM has one.
 */
function vncInfo(vm: Vm, host: string): Record<string, unknown> {
  const setPort = typeof vm.vnc_port === 'number' ? vm.vnc_port : 0;
  if (setPort === -1) return {};
  const port = setPort > 0 ? setPort : 5900 + displayOf(vm);
  const out: Record<string, unknown> = { host, port };
  if (port >= 5900) out.display = port - 5900;
  if (typeof vm.vnc_password === 'string' && vm.vnc_password.length > 0) out.password = vm.vnc_password;
  return out;
}

function infoOf(vm: Vm, type: string, host: string): unknown {
  const disks = vm.disks ?? [];
  switch (type) {
    case 'vnc':
      return vncInfo(vm, host);
    case 'spice':
      return typeof vm.spice_port === 'number' && vm.spice_port > 0 ? { host, port: vm.spice_port } : {};
    case 'status':
      return { status: 'running', running: true };
    case 'version':
      return { qemu: '2.4.1', package: '' };
    case 'kvm':
      return { enabled: true, present: true };
    case 'cpus':
      return Array.from({ length: typeof vm.vcpus === 'number' ? vm.vcpus : 1 }, (_, i) => ({
        cpu: i,
        pc: '0x0',
        halted: false,
        thread_id: 1000 + i,
      }));
    case 'block':
      return disks.map((d, i) => ({ device: `virtio${i}`, type: 'unknown', removable: false, locked: false, file: d.path }));
    case 'blockstats':
      return disks.map((_d, i) => ({ device: `virtio${i}`, rd_bytes: 0, wr_bytes: 0, rd_operations: 0, wr_operations: 0 }));
    case 'chardev':
      return [{ label: 'serial0', filename: 'unix:/tmp/vm.console,server' }];
    case 'pci':
      return [];
    default:
      return {};
  }
}

export function vmInfo(vm: Vm, types: readonly string[] | undefined, opts: InfoOptions = {}): Record<string, unknown> {
  const host = opts.host ?? '127.0.0.1';
  checkRunning(vm, 'Unable to get info for vm');
  const supported = INFO_TYPES[vm.brand];
  if (!supported) throw unsupported(`no info types supported for brand ${vm.brand}`);
  const wanted = types && types.length > 0 ? types : ['all'];
  for (const t of wanted) {
    if (!supported.includes(t)) throw invalidValue('types', `unknown info type ${t}`);
  }
  const expanded = wanted.includes('all') ? supported.filter((t) => t !== 'all') : wanted;
  const out: Record<string, unknown> = {};
  for (const t of expanded) out[t] = infoOf(vm, t, host);
  return out;
}

export function checkSysrq(vm: Vm, request: string): void {
  checkRunning(vm, 'Unable to send request to vm');
  const valid = SYSRQ_TYPES[vm.brand];
  if (!valid) throw unsupported('The sysrq command is only supported for VMs with brand "bhyve" or "kvm".');
  if (!valid.includes(request)) {
    throw invalidValue('request', `Invalid sysrq "${request}" valid values: "${valid.join('","')}".`);
  }
}
