/**
 * `vmadm list`, `vmadm get` and `vmadm lookup` over the CN's VMs, printed as the real vmadm
 * prints them (smartos-live src/vm/sbin/vmadm.js, VM.js `flatten` and `lookup`):
 *
 *   list    columns `uuid,type,ram,state,alias` sorted by `ram,uuid` unless -o / -s say
 *           otherwise; -H drops the header, -p prints `:`-separated values and no header;
 *           `field=value` filters. Each column is padded to its fixed width, two spaces apart.
 *   get     the VM as indented JSON.
 *   lookup  matching uuids one per line; -j the VMs as a JSON array, -o (with -j) only
 *           those fields, -1 exactly one match or an error.
 *
 * `type` and (for zones) `ram` are vmadm's computed list fields. Filters match a field's
 * string form exactly, or with `~` as a case-insensitive regular expression; `nics.*.ip`
 * style keys look at every element. The other subcommands change VMs: not on a mock CN's
 * read-only global zone (the VMs change through cn-agent's tasks).
 */
import { parseArgs, lastValue, hasFlag, UsageError, type ParsedArgs } from './args.js';
import { fail, ok, type CommandResult, type GzSnapshot } from './types.js';

type VmObject = Record<string, unknown>;

/** vmadm's listable fields: header and column width. */
const LIST_FIELDS: Record<string, { header: string; width: number }> = {
  alias: { header: 'ALIAS', width: 10 },
  autoboot: { header: 'AUTOBOOT', width: 8 },
  billing_id: { header: 'BILLING_ID', width: 36 },
  boot_timestamp: { header: 'BOOT_TIMESTAMP', width: 24 },
  brand: { header: 'BRAND', width: 14 },
  cpu_cap: { header: 'CPU_CAP', width: 7 },
  cpu_shares: { header: 'CPU_SHARE', width: 9 },
  cpu_type: { header: 'CPU_TYPE', width: 8 },
  create_timestamp: { header: 'CREATE_TIMESTAMP', width: 24 },
  dns_domain: { header: 'DOMAIN', width: 32 },
  do_not_inventory: { header: 'DNI', width: 5 },
  docker: { header: 'DOCKER', width: 6 },
  exit_status: { header: 'EXIT', width: 4 },
  exit_timestamp: { header: 'EXIT_TIMESTAMP', width: 24 },
  firewall_enabled: { header: 'FIREWALL_ENABLED', width: 16 },
  flexible_disk_size: { header: 'FLEX_DISK_SIZE', width: 14 },
  free_space: { header: 'FREE_SPACE', width: 14 },
  hostname: { header: 'HOSTNAME', width: 32 },
  hvm: { header: 'HVM', width: 5 },
  image_uuid: { header: 'IMAGE_UUID', width: 36 },
  indestructible_delegated: { header: 'INDESTR_DATA', width: 12 },
  indestructible_zoneroot: { header: 'INDESTR_ROOT', width: 12 },
  ram: { header: 'RAM', width: 7 },
  max_locked_memory: { header: 'MAX_LOCKED', width: 10 },
  max_lwps: { header: 'MAX_LWP', width: 7 },
  max_physical_memory: { header: 'MAX_PHYS', width: 8 },
  max_swap: { header: 'MAX_SWAP', width: 8 },
  owner_uuid: { header: 'OWNER_UUID', width: 36 },
  package_name: { header: 'PACKAGE_NAME', width: 32 },
  package_version: { header: 'PACKAGE_VER', width: 11 },
  pid: { header: 'PID', width: 6 },
  qemu_extra_opts: { header: 'QEMU_EXTRA_OPTS', width: 15 },
  quota: { header: 'QUOTA', width: 5 },
  zone_state: { header: 'ZONE_STATE', width: 10 },
  state: { header: 'STATE', width: 16 },
  tmpfs: { header: 'TMPFS', width: 5 },
  type: { header: 'TYPE', width: 4 },
  uuid: { header: 'UUID', width: 36 },
  vcpus: { header: 'VCPUS', width: 5 },
  zfs_io_priority: { header: 'IO_PRIORITY', width: 11 },
  zpool: { header: 'ZPOOL', width: 12 },
  zonename: { header: 'ZONENAME', width: 12 },
  zonepath: { header: 'ZONEPATH', width: 40 },
  zoneid: { header: 'ZONEID', width: 6 },
};

const DEFAULT_SORT = 'ram,uuid';
const DEFAULT_ORDER = 'uuid,type,ram,state,alias';

/** The `flattenable` properties of vmadm's property table. */
const FLATTENABLE_ARRAYS = ['internal_metadata_namespaces', 'resolvers'];
const FLATTENABLE_ARRAY_HASH_KEYS = ['disks', 'nics', 'pci_devices'];
const FLATTENABLE_HASH_KEYS = ['customer_metadata', 'internal_metadata', 'routes', 'tags'];

/** The type vmadm shows per brand (BRAND_OPTIONS features.type, cut to 4 characters). */
const BRAND_TYPES: Record<string, string> = {
  bhyve: 'BHYV',
  builder: 'OS',
  joyent: 'OS',
  'joyent-minimal': 'OS',
  kvm: 'KVM',
  lx: 'LX',
};

const COMMANDS = [
  'boot', 'console', 'create', 'create-snapshot', 'delete', 'delete-snapshot', 'destroy', 'events', 'get', 'halt',
  'help', 'info', 'install', 'json', 'kill', 'list', 'lookup', 'reboot', 'receive', 'recv', 'reprovision',
  'rollback-snapshot', 'send', 'start', 'stop', 'sysrq', 'update', 'validate',
];

const USAGE = [
  'Usage: /usr/sbin/vmadm <command> [options]',
  '',
  'create [-f <filename>]',
  'create-snapshot <uuid> <snapname>',
  'console <uuid>',
  'delete <uuid>',
  'delete-snapshot <uuid> <snapname>',
  'events [-fjr] [uuid]',
  'get <uuid>',
  'info <uuid> [type,...]',
  'install <uuid>',
  'kill [-s SIGNAL|-SIGNAL] <uuid>',
  'list [-p] [-H] [-o field,...] [-s field,...] [field=value ...]',
  'lookup [-j|-1] [-o field,...] [field=value ...]',
  'reboot <uuid> [-F]',
  'receive [-f <filename>]',
  'reprovision <uuid> [-f <filename>]',
  'rollback-snapshot <uuid> <snapname>',
  'send <uuid> [target]',
  'start <uuid> [option=value ...]',
  'stop <uuid> [-F] [-t timeout]',
  'sysrq <uuid> <nmi|screenshot>',
  'update <uuid> [-f <filename>]',
  ' -or- update <uuid> property=value [property=value ...]',
  'validate create [-f <filename>]',
  'validate update <brand> [-f <filename>]',
  '',
  "For more detailed information on the use of this command,type 'man vmadm'.",
].join('\n');

function usage(message?: string, code = 2): CommandResult {
  const text = `${message ? `${message}\n` : ''}${USAGE}\n`;
  return code === 0 ? ok(text) : fail(text, code);
}

export function vmadm(snapshot: GzSnapshot, args: string[]): CommandResult {
  const [command, ...rest] = args;
  if (command === undefined) return usage();
  if (command === '-h' || command === '-?' || command === 'help') return usage(undefined, 0);
  if (!COMMANDS.includes(command)) return usage(`Invalid command: "${command}".`);
  try {
    switch (command) {
      case 'list':
        return list(snapshot, parseArgs(rest, LIST_OPTIONS));
      case 'lookup':
        return lookup(snapshot, parseArgs(rest, LOOKUP_OPTIONS));
      case 'get':
      case 'json':
        return get(snapshot, command, parseArgs(rest, COMMON_OPTIONS));
      default:
        return fail(`vmadm ${command}: not available on a mock CN (mockcloud): its VMs change only through cn-agent tasks`);
    }
  } catch (err) {
    if (err instanceof UsageError) return usage(err.message);
    throw err;
  }
}

const COMMON_OPTIONS = { withValue: {}, flags: { v: 'verbose', verbose: 'verbose', d: 'debug', debug: 'debug' } };
const LIST_OPTIONS = {
  withValue: { o: 'order', order: 'order', s: 'sortby', sortby: 'sortby' },
  flags: { ...COMMON_OPTIONS.flags, p: 'parsable', parsable: 'parsable', h: 'header', H: 'noheader' },
};
const LOOKUP_OPTIONS = {
  withValue: { o: 'output', output: 'output' },
  flags: { ...COMMON_OPTIONS.flags, j: 'json', json: 'json', '1': 'unique', unique: 'unique' },
};

function get(snapshot: GzSnapshot, command: string, p: ParsedArgs): CommandResult {
  const uuid = p.positional[0];
  if (uuid === undefined || !looksLikeUuid(uuid)) return usage(`Invalid or missing UUID for ${command}`);
  const vm = snapshot.vms.find((v) => v.uuid === uuid);
  if (!vm) return fail(`zoneadm: ${uuid}: No such zone configured`);
  return ok(`${JSON.stringify(vm, null, 2)}\n`);
}

function list(snapshot: GzSnapshot, p: ParsedArgs): CommandResult {
  const filters = keyEqualsValue(p.positional);
  const sortby = lastValue(p, 'sortby') ?? DEFAULT_SORT;
  const order = lastValue(p, 'order') ?? DEFAULT_ORDER;
  const parsable = hasFlag(p, 'parsable');
  let header = !parsable;
  if (hasFlag(p, 'header')) header = true;
  if (hasFlag(p, 'noheader')) header = false;

  for (const key of Object.keys(filters)) if (!validFilterKey(key)) return fail(`Invalid filter key: "${key}"`);
  const orderFields = order.split(',');
  for (const key of orderFields) if (!validColumnKey(key)) return fail(`Invalid order key: "${key}"`);
  const sortFields = sortby.split(',');
  for (const key of sortFields) if (!validColumnKey(key)) return fail(`Invalid sort key: "${key}"`);
  for (const key of sortFields) {
    const bare = key[0] === '-' || key[0] === '+' ? key.slice(1) : key;
    if (!listProperties(bare)) return fail(`invalid sort field: ${key}`);
  }
  for (const key of orderFields) if (!listProperties(key)) return fail(`invalid order field: ${key}`);

  const vms = matching(snapshot, filters);
  vms.sort((a, b) => sortVm(a, b, sortFields));
  const lines: string[] = [];
  if (header) lines.push(listLine(orderFields, undefined, parsable));
  for (const vm of vms) lines.push(listLine(orderFields, vm, parsable));
  return ok(lines.map((l) => `${l}\n`).join(''));
}

function lookup(snapshot: GzSnapshot, p: ParsedArgs): CommandResult {
  const filters = keyEqualsValue(p.positional);
  const json = hasFlag(p, 'json');
  const output = lastValue(p, 'output');
  if (!json && output !== undefined) return fail('Cannot specify -o without -j');
  for (const key of Object.keys(filters)) if (!validFilterKey(key)) return fail(`Invalid lookup key: "${key}"`);
  let results = matching(snapshot, filters);
  if (hasFlag(p, 'unique') && results.length !== 1) {
    return fail(`Requested unique lookup but found ${results.length} results.`);
  }
  if (!json) return ok(results.map((vm) => `${String(vm.uuid)}\n`).join(''));
  if (output !== undefined) {
    const fields = output.split(',');
    results = results
      .map((vm) => Object.fromEntries(Object.entries(vm).filter(([k]) => fields.includes(k))))
      .filter((vm) => Object.keys(vm).length > 0);
  }
  return ok(`${JSON.stringify(results, null, 2)}\n`);
}

/** Copies of the VMs with vmadm's computed fields, filtered. */
function matching(snapshot: GzSnapshot, filters: Record<string, string>): VmObject[] {
  return snapshot.vms.map(withFakeFields).filter((vm) => matches(vm, filters));
}

function withFakeFields(vm: VmObject): VmObject {
  const out: VmObject = { ...vm };
  out.type = BRAND_TYPES[String(vm.brand)] ?? 'OS';
  if (vm.brand !== 'kvm' && vm.brand !== 'bhyve') out.ram = vm.max_physical_memory;
  return out;
}

/** `key=value` arguments; a later key wins; a bare word is a key (then refused as a filter). */
function keyEqualsValue(args: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq === -1) out[arg] = '';
    else out[arg.slice(0, eq)] = arg.slice(eq + 1);
  }
  return out;
}

function validFilterKey(key: string): boolean {
  if (Object.hasOwn(LIST_FIELDS, key)) return true;
  if (/^disks\.[*0-9]*\.(boot|image_name|image_size|image_uuid|size|media|model|zpool)$/.test(key)) return true;
  if (/nics\.[*0-9]*\.(dhcp_server|gateway|interface|ip|mac|model|netmask|nic_tag|vlan_id)$/.test(key)) return true;
  return /^(tags|customer_metadata|internal_metadata)\..*/.test(key);
}

/** A `.*.` column names no single element: fine for a lookup, not for a column. */
function validColumnKey(key: string): boolean {
  return !/^(disks|filesystems|nics)\.\*\.*/.test(key);
}

function listProperties(field: string): { header: string; width: number } | undefined {
  if (Object.hasOwn(LIST_FIELDS, field)) return LIST_FIELDS[field];
  const tokens = field.split('.');
  if (tokens.length === 3 && FLATTENABLE_ARRAY_HASH_KEYS.includes(tokens[0]!)) return { header: field.toUpperCase(), width: 20 };
  if (tokens.length === 2 && FLATTENABLE_HASH_KEYS.includes(tokens[0]!)) return { header: field.toUpperCase(), width: 20 };
  return undefined;
}

/** VM.js `flatten`: `nics.0.ip`, `tags.role`, `resolvers.1`, or a plain key. */
function flatten(vm: VmObject, key: string): unknown {
  const tokens = key.split('.');
  const top = vm[tokens[0]!];
  if (tokens.length === 3 && FLATTENABLE_ARRAY_HASH_KEYS.includes(tokens[0]!)) {
    if (!Array.isArray(top)) return undefined;
    const el = top[Number(tokens[1])] as Record<string, unknown> | undefined;
    return el === undefined ? undefined : el[tokens[2]!];
  }
  if (tokens.length === 2 && FLATTENABLE_HASH_KEYS.includes(tokens[0]!)) {
    return top && typeof top === 'object' ? (top as Record<string, unknown>)[tokens[1]!] : undefined;
  }
  if (tokens.length === 2 && FLATTENABLE_ARRAYS.includes(tokens[0]!)) {
    const index = Number(tokens[1]);
    return Array.isArray(top) && Number.isInteger(index) && index >= 0 ? top[index] : undefined;
  }
  return vm[key];
}

function matches(vm: VmObject, filters: Record<string, string>): boolean {
  for (const [key, target] of Object.entries(filters)) {
    const regex = target.startsWith('~') ? safeRegExp(target.slice(1)) : undefined;
    const test = (k: string): boolean => {
      const value = flatten(vm, k);
      if (value === undefined || value === null) return false;
      if (regex) return regex.test(String(value));
      if (/^nics\..*\.mac$/.test(k)) return normalizeMac(String(value)) === normalizeMac(target);
      return String(value) === target;
    };
    const tokens = key.split('.');
    let found: boolean;
    if (tokens.length === 3 && tokens[1] === '*' && FLATTENABLE_ARRAY_HASH_KEYS.includes(tokens[0]!) && Array.isArray(vm[tokens[0]!])) {
      found = (vm[tokens[0]!] as unknown[]).some((_, i) => test(`${tokens[0]}.${i}.${tokens[2]}`));
    } else {
      found = test(key);
    }
    if (!found) return false;
  }
  return true;
}

function safeRegExp(source: string): RegExp {
  try {
    return new RegExp(source, 'i');
  } catch {
    throw new UsageError(`Invalid regular expression: ${source}`);
  }
}

function normalizeMac(mac: string): string {
  return mac
    .toLowerCase()
    .split(':')
    .map((part) => part.replace(/^0+(?=.)/, ''))
    .join(':');
}

/** vmadm's sort: each field ascending (or `-field` descending), a missing value last. */
function sortVm(a: VmObject, b: VmObject, fields: readonly string[]): number {
  for (let field of fields) {
    let direction = 1;
    if (field[0] === '+' || field[0] === '-') {
      direction = field[0] === '-' ? -1 : 1;
      field = field.slice(1);
    }
    const av = flatten(a, field) as number | string | undefined;
    const bv = flatten(b, field) as number | string | undefined;
    if ((av !== undefined && bv !== undefined && av > bv) || (!av && bv) || (av === undefined && bv !== undefined)) {
      return direction;
    }
    if ((av !== undefined && bv !== undefined && av < bv) || (av && !bv) || (av !== undefined && bv === undefined)) {
      return -direction;
    }
  }
  return 0;
}

function listLine(fields: readonly string[], vm: VmObject | undefined, parsable: boolean): string {
  const cells = fields.map((field) => {
    const props = listProperties(field)!;
    let value: string;
    if (!vm) {
      value = props.header;
    } else {
      const flat = flatten(vm, field);
      value = flat || flat === 0 ? String(flat) : parsable ? '' : '-';
    }
    return parsable ? value : value.padEnd(props.width);
  });
  return cells.join(parsable ? ':' : '  ').replace(/\s+$/, '');
}

function looksLikeUuid(s: string): boolean {
  return s.length === 36 && s[8] === '-' && s[13] === '-' && s[18] === '-' && s[23] === '-';
}
