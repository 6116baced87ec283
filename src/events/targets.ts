/**
 * Which CNs an event acts on: a list, a percentage or a count drawn from the fleet, a
 * profile's CNs, or all of them; never the dev DC's headnode server. Draws come from the
 * caller's seeded stream over the CNs in uuid order, so a replay draws the same CNs.
 */
import { MockcloudError } from '../common/errors.js';
import type { RandomStream } from '../common/seeded-random.js';
import type { MockCn } from '../mockcn/types.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import type { TargetSpec } from './types.js';

export function noMatch(message: string): MockcloudError {
  return new MockcloudError('NoMatchingServers', message);
}

export function selectTargets(fleet: readonly MockCn[], target: TargetSpec, random: RandomStream): MockCn[] {
  const candidates = fleet.filter((cn) => !isHeadnodeSysinfo(cn.sysinfo)).sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  if ('servers' in target) {
    const byUuid = new Map(fleet.map((cn) => [cn.uuid.toLowerCase(), cn]));
    const out: MockCn[] = [];
    for (const uuid of target.servers) {
      const cn = byUuid.get(uuid);
      if (!cn) throw noMatch(`server ${uuid} is not one of this daemon's mock CNs (see mockcloud list-servers)`);
      if (isHeadnodeSysinfo(cn.sysinfo)) throw noMatch(`server ${uuid} is the dev DC's headnode server: never a target of events`);
      out.push(cn);
    }
    return out;
  }
  if (candidates.length === 0) throw noMatch('this daemon hosts no compute node to act on');
  if ('all' in target) return candidates;
  if ('profile' in target) {
    const out = candidates.filter((cn) => cn.profile === target.profile);
    if (out.length === 0) throw noMatch(`no compute node has profile ${JSON.stringify(target.profile)}`);
    return out;
  }
  const n = 'count' in target ? Math.min(target.count, candidates.length) : Math.max(1, Math.round((candidates.length * target.percent) / 100));
  return random.shuffle(candidates).slice(0, n);
}
