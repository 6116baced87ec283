/**
 * A weighted mix of hardware profiles (`--mix small:70,large:25,storage:5`): parsing, and the
 * exact number of CNs of each profile for a count. Counts are the largest-remainder
 * apportionment of the weights (Hamilton's method), so they always add up to the count and
 * each is its weight's share rounded down or up; ties in the remainders go to the profile named
 * first. Which CN gets which profile is drawn from the seeded stream by the server factory.
 */
import { MockcloudError } from '../common/errors.js';

/** Profile names and weights, in the order given. */
export type Mix = [name: string, weight: number][];

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A mix from its text (`small:70,large:25`) or an object (`{"small": 70}`), checked for shape only. */
export function parseMix(value: unknown): Mix {
  let entries: [string, unknown][];
  if (typeof value === 'string') {
    entries = value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '')
      .map((part) => {
        const m = /^([^:\s]+)\s*:\s*(\S+)$/.exec(part);
        if (!m) throw bad(`${JSON.stringify(part)} is not NAME:WEIGHT`);
        return [m[1]!, Number(m[2])];
      });
  } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    entries = Object.entries(value);
  } else {
    throw bad('it must be a string like "small:70,large:30" or an object like {"small": 70, "large": 30}');
  }
  if (entries.length === 0) throw bad('it names no profile');
  const seen = new Set<string>();
  const mix: Mix = [];
  for (const [name, weight] of entries) {
    if (!NAME_RE.test(name)) throw bad(`${JSON.stringify(name)} is not a profile name`);
    if (seen.has(name)) throw bad(`profile ${name} is named twice`);
    seen.add(name);
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0) {
      throw bad(`the weight of ${name} must be a number ≥ 0, not ${JSON.stringify(weight)}`);
    }
    mix.push([name, weight]);
  }
  if (!mix.some(([, w]) => w > 0)) throw bad('every weight is 0');
  return mix;
}

/** The mix as text, for messages and logs. */
export function formatMix(mix: Mix): string {
  return mix.map(([n, w]) => `${n}:${w}`).join(',');
}

/** How many of `total` CNs each profile gets: exact, by largest remainder. */
export function apportion(total: number, mix: Mix): Map<string, number> {
  const sum = mix.reduce((a, [, w]) => a + w, 0);
  const shares = mix.map(([name, w], i) => {
    const exact = (total * w) / sum;
    return { name, i, floor: Math.floor(exact), rest: exact - Math.floor(exact) };
  });
  let left = total - shares.reduce((a, s) => a + s.floor, 0);
  const byRest = [...shares].sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const s of byRest) {
    if (left <= 0) break;
    s.floor++;
    left--;
  }
  return new Map(shares.map((s) => [s.name, s.floor]));
}

/**
 * The exact counts of `total` CNs split into consecutive batches of the given sizes, so that
 * creating batch by batch (the CLI's progress, the daemon's --servers) still gives the whole
 * run's exact counts: each batch gets the difference of the apportionments of its end and of
 * its start over the run. Each batch's counts are sent as the batch's mix (weights that are
 * counts apportion to themselves).
 */
export function batchMixes(total: number, mix: Mix, batchSizes: readonly number[]): Mix[] {
  const out: Mix[] = [];
  let done = 0;
  let before = cumulative(done, total, mix);
  for (const n of batchSizes) {
    done += n;
    const after = cumulative(done, total, mix);
    out.push(mix.map(([name]): [string, number] => [name, after.get(name)! - before.get(name)!]).filter(([, c]) => c > 0));
    before = after;
  }
  return out;
}

/**
 * How many of the first `done` CNs of a run of `total` are of each profile: a prefix of the
 * run in which each profile keeps to its share (the apportionment of the whole run, spread
 * evenly: profile p's j-th CN comes at position ⌈(j - 0.5) · total / count_p⌉).
 */
function cumulative(done: number, total: number, mix: Mix): Map<string, number> {
  const counts = apportion(total, mix);
  const out = new Map<string, number>();
  if (done >= total) return counts;
  // Order every CN of the run by its ideal position, then count the first `done`.
  const slots: { name: string; at: number; i: number }[] = [];
  mix.forEach(([name], i) => {
    const c = counts.get(name)!;
    for (let j = 1; j <= c; j++) slots.push({ name, at: ((j - 0.5) * total) / c, i });
  });
  slots.sort((a, b) => a.at - b.at || a.i - b.i);
  for (const [name] of mix) out.set(name, 0);
  for (const s of slots.slice(0, done)) out.set(s.name, out.get(s.name)! + 1);
  return out;
}

function bad(why: string): MockcloudError {
  return new MockcloudError('InvalidArgument', `bad mix: ${why}`);
}
