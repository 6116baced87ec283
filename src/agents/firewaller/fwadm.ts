/**
 * What `fwadm` prints on a CN for its store (smartos-live src/fw/lib/cli.js, fwadm.js): the
 * commands that read state, `list`, `list-rvms`, `get <rule>`, `get-rvm <vm>`, `vms <rule>`
 * (the CN's VMs the rule applies to), `rules <vm>` (the rules that apply to a VM) and
 * `status <vm>` (running when the VM runs with its firewall enabled). Used by the control
 * API's `fwadm` view and by command_execute's mock `fwadm`.
 */
import { parseRule, ruleAppliesTo, type RemoteVm, type RuleData } from './rules.js';

export interface FwadmState {
  rules: readonly RuleData[];
  rvms: readonly RemoteVm[];
  /** The CN's VMs as vmadm gives them. */
  vms: readonly Record<string, unknown>[];
}

export interface FwadmOutput {
  code: number;
  stdout: string;
  stderr: string;
}

const ok = (stdout: string): FwadmOutput => ({ code: 0, stdout, stderr: '' });
const fail = (stderr: string, code = 1): FwadmOutput => ({ code, stdout: '', stderr });

function table(rules: readonly RuleData[]): string {
  return `${'UUID'.padEnd(36)} ENABLED RULE\n${rules.map((r) => `${r.uuid} ${String(r.enabled).padEnd(7)} ${r.rule}\n`).join('')}`;
}

function ipsOf(vm: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const n of Array.isArray(vm.nics) ? (vm.nics as Record<string, unknown>[]) : []) if (typeof n?.ip === 'string' && n.ip !== 'dhcp') out.push(n.ip);
  return out;
}

function applies(rule: RuleData, vm: Record<string, unknown>): boolean {
  try {
    return ruleAppliesTo(parseRule(rule).fw, {
      uuid: String(vm.uuid),
      ...(typeof vm.owner_uuid === 'string' ? { owner_uuid: vm.owner_uuid } : {}),
      tags: (vm.tags as Record<string, unknown> | undefined) ?? {},
      ips: ipsOf(vm),
    });
  } catch {
    return false;
  }
}

export function fwadmOutput(state: FwadmState, args: readonly string[]): FwadmOutput {
  const [cmd, arg] = args;
  const rules = [...state.rules].sort((a, b) => a.uuid.localeCompare(b.uuid));
  const vm = state.vms.find((v) => v.uuid === arg);
  switch (cmd) {
    case 'list':
      return ok(table(rules));
    case 'list-rvms':
      return ok(`${JSON.stringify(state.rvms, null, 2)}\n`);
    case 'get': {
      const r = rules.find((x) => x.uuid === arg);
      return r ? ok(`${JSON.stringify(r, null, 2)}\n`) : fail(`Error: rule "${arg ?? ''}" does not exist\n`);
    }
    case 'get-rvm': {
      const r = state.rvms.find((x) => x.uuid === arg);
      return r ? ok(`${JSON.stringify(r, null, 2)}\n`) : fail(`Error: remote VM "${arg ?? ''}" does not exist\n`);
    }
    case 'vms': {
      const r = rules.find((x) => x.uuid === arg);
      if (!r) return fail(`Error: rule "${arg ?? ''}" does not exist\n`);
      return ok(state.vms.filter((v) => applies(r, v)).map((v) => `${String(v.uuid)}\n`).sort().join(''));
    }
    case 'rules':
      if (!vm) return fail(`Error: VM "${arg ?? ''}" does not exist\n`);
      return ok(table(rules.filter((r) => applies(r, vm))));
    case 'status':
      if (!vm) return fail(`Error: VM "${arg ?? ''}" does not exist\n`);
      return ok(`${vm.firewall_enabled === true && vm.state === 'running' ? 'running' : 'stopped'}\n`);
    default:
      return fail(`fwadm: unknown command "${cmd ?? ''}" (a mock CN answers list, list-rvms, get, get-rvm, vms, rules, status)\n`, 2);
  }
}
