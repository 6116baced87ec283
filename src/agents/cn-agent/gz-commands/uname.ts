/**
 * `uname`, `hostname` and `zonename` as a SmartOS global zone answers them: SunOS 5.11 on
 * i86pc, the version `joyent_<Live Image>`, the node name the CN's sysinfo Hostname.
 */
import { fail, ok, type CommandResult, type GzSnapshot } from './types.js';

export function uname(snapshot: GzSnapshot, args: string[]): CommandResult {
  const hostname = String(snapshot.sysinfo.Hostname ?? '');
  const values: Record<string, string> = {
    s: 'SunOS',
    n: hostname,
    r: '5.11',
    v: `joyent_${String(snapshot.sysinfo['Live Image'] ?? '')}`,
    m: 'i86pc',
    p: 'i386',
    i: 'i86pc',
  };
  const wanted = new Set<string>();
  for (const arg of args) {
    if (!arg.startsWith('-') || arg.length < 2) return fail('usage: uname [-snrvmapiX]\n       uname [-S system_name]');
    for (const letter of arg.slice(1)) {
      if (letter === 'a') ['s', 'n', 'r', 'v', 'm', 'p', 'i'].forEach((l) => wanted.add(l));
      else if (values[letter] !== undefined) wanted.add(letter);
      else return fail(`uname: illegal option -- ${letter}\nusage: uname [-snrvmapiX]\n       uname [-S system_name]`);
    }
  }
  if (wanted.size === 0) wanted.add('s');
  const out = ['s', 'n', 'r', 'v', 'm', 'p', 'i'].filter((l) => wanted.has(l)).map((l) => values[l]);
  return ok(`${out.join(' ')}\n`);
}

export function hostname(snapshot: GzSnapshot, args: string[]): CommandResult {
  if (args.length > 0) return fail('hostname: a mock CN (mockcloud) keeps the hostname of its sysinfo');
  return ok(`${String(snapshot.sysinfo.Hostname ?? '')}\n`);
}

export function zonename(_snapshot: GzSnapshot, args: string[]): CommandResult {
  if (args.length > 0) return fail('usage: zonename');
  return ok('global\n');
}
