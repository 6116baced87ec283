/**
 * The checks only a running daemon can answer: does each target match a server at the time
 * it is applied? Profiles must be ones the daemon has; named servers must be in its fleet
 * (and not its dev DC's headnode server, which is never an event's target nor deleted); a
 * `percent`, `count` or `all` target needs a fleet that is not empty at that point of the
 * timeline, counting the CNs the scenario creates and deletes before it.
 */
import { formatDuration } from '../common/duration.js';
import { timeline } from './timeline.js';
import type { Scenario, ScenarioProblem, Step, Target } from './types.js';

/** What the daemon told us: its CNs (GET /servers) and its profiles' names (GET /profiles). */
export interface FleetView {
  servers: { uuid: string; headnode?: boolean; profile?: string }[];
  profiles: string[];
}

/** What the CNs created before the event may be, as far as the file says. */
const DEFAULT_PROFILE = 'virtual';

export function checkAgainstFleet(s: Scenario, fleet: FleetView): ScenarioProblem[] {
  const problems: ScenarioProblem[] = [];
  const seen = new Set<string>();
  const complain = (step: Step, message: string, atTarget = true): void => {
    const key = `${step.index}\0${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    const at = (atTarget && step.targetPos) || step.pos;
    problems.push({ line: at.line, col: at.col, message });
  };
  const headnodes = new Set(fleet.servers.filter((x) => x.headnode === true).map((x) => x.uuid));
  const cns = fleet.servers.filter((x) => x.headnode !== true);
  const present = new Set(cns.map((x) => x.uuid));
  /** Which step deleted a named server, for the message. */
  const deletedBy = new Map<string, Step>();
  // Profiles of CNs are only known when the daemon lists them (it names each CN's profile).
  const profileAware = fleet.servers.length > 0 && fleet.servers.every((x) => typeof x.profile === 'string');
  const byProfile = new Map<string, number>();
  for (const x of cns) byProfile.set(x.profile ?? DEFAULT_PROFILE, (byProfile.get(x.profile ?? DEFAULT_PROFILE) ?? 0) + 1);
  let size = cns.length;
  const profileNames = (): string => fleet.profiles.join(', ') || 'none';

  const checkNamed = (step: Step, uuids: string[], verb: string): void => {
    for (const u of uuids) {
      if (headnodes.has(u)) complain(step, `server ${u} is the dev DC's headnode server: it is never ${verb}`);
      else if (deletedBy.has(u)) complain(step, `server ${u} is deleted by step ${deletedBy.get(u)!.index} (line ${deletedBy.get(u)!.pos.line}) before this step`);
      else if (!present.has(u)) complain(step, `server ${u} is not one of the daemon's mock CNs (see mockcloud list-servers)`);
    }
  };

  for (const entry of timeline(s)) {
    const { step } = entry;
    const when = `at ${formatDuration(entry.atMs)}`;
    const a = step.action;
    if (a.kind === 'create') {
      const names = a.mixWeights ? Object.keys(a.mixWeights) : a.profile !== undefined ? [a.profile] : [];
      for (const n of names) {
        if (!fleet.profiles.includes(n)) complain(step, `the daemon has no profile ${JSON.stringify(n)} (its profiles: ${profileNames()})`, false);
      }
      size += a.count;
      for (const n of names.length ? names : [DEFAULT_PROFILE]) byProfile.set(n, (byProfile.get(n) ?? 0) + a.count);
    } else if (a.kind === 'delete') {
      if ('servers' in a) {
        checkNamed(step, a.servers, 'deleted');
        for (const u of a.servers) {
          if (present.delete(u)) {
            deletedBy.set(u, step);
            size--;
          }
        }
      } else {
        if (size === 0) complain(step, `delete matches no CN: the fleet has none ${when}`);
        size = Math.max(0, size - a.count);
      }
    } else if (a.kind === 'event') {
      checkTarget(a.event.target, step, when);
    }
  }
  return problems;

  function checkTarget(t: Target, step: Step, when: string): void {
    if ('servers' in t) {
      checkNamed(step, t.servers, 'the target of an event');
    } else if ('profile' in t) {
      if (!fleet.profiles.includes(t.profile)) complain(step, `target profile ${JSON.stringify(t.profile)} matches nothing: the daemon has no such profile (its profiles: ${profileNames()})`);
      else if (size === 0 || (profileAware && (byProfile.get(t.profile) ?? 0) === 0)) complain(step, `target profile ${JSON.stringify(t.profile)} matches no server: the fleet has no CN of that profile ${when}`);
    } else if (size === 0) {
      complain(step, `the target matches no server: the fleet has no CNs ${when} (the dev DC's headnode server is never a target)`);
    }
  }
}
