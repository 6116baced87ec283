/**
 * DAPI's scoring plug-ins (sdc-designation lib/algorithms/score-*, lib/scorers.js): each adds
 * to `server.score`, weighted by DAPI's defaults or the package's `alloc_server_spread`; the
 * highest score wins.
 */
import { num, vmOf, keep, type DapiServer, type Plugin, type PluginOpts, type Reasons } from './types.js';

function scoreLinear(ordered: DapiServer[], weight: number, reasons: Reasons): void {
  if (ordered.length === 0) return;
  const step = ordered.length === 1 ? 0 : 1 / (ordered.length - 1);
  ordered.forEach((s, i) => {
    const delta = ordered.length === 1 ? weight : (ordered.length - 1 - i) * step * weight;
    s.score += delta;
    reasons[s.uuid] = `increased score by ${delta.toFixed(2)} to ${s.score.toFixed(2)}`;
  });
}

function spreadOf(o: PluginOpts): string | undefined {
  return (o.pkg?.alloc_server_spread as string | undefined) || o.defaults.server_spread;
}

export const scoreUnreservedRam: Plugin = {
  name: 'Score servers based on unreserved RAM',
  run: (servers, o) => {
    const spread = spreadOf(o);
    const compat = spread === undefined ? null : spread === 'min-ram' ? 2 : spread === 'max-ram' ? -2 : 0;
    if (compat === 0) return keep(servers, { skip: 'pkg or default set to score with other plugin' });
    const weight = compat || o.defaults.weight_unreserved_ram;
    if (!weight) return keep(servers, { skip: 'Resolved score weight to 0.00; no changes' });
    const reasons: Reasons = {};
    scoreLinear([...servers].sort((a, b) => weight * (num(a.unreserved_ram) - num(b.unreserved_ram))), Math.abs(weight), reasons);
    return keep(servers, reasons);
  },
};

export const scoreUnreservedDisk: Plugin = {
  name: 'Score servers based on unreserved disk',
  run: (servers, o) => {
    const spread = spreadOf(o);
    if (spread) return keep(servers, { skip: `pkg or default set to spread with: ${spread}` });
    const weight = o.defaults.weight_unreserved_disk;
    if (weight === 0) return keep(servers, { skip: 'Resolved score weight to 0.00; no changes' });
    const reasons: Reasons = {};
    scoreLinear([...servers].sort((a, b) => weight * (num(a.unreserved_disk) - num(b.unreserved_disk))), Math.abs(weight), reasons);
    return keep(servers, reasons);
  },
};

export const scoreNumOwnerZones: Plugin = {
  name: 'Score servers based on number of zones belonging to owner',
  run: (servers, o) => {
    const spread = spreadOf(o);
    if (spread && spread !== 'min-owner') return keep(servers, { skip: `pkg or default set to spread with: ${spread}` });
    const weight = spread === 'min-owner' ? 2 : o.defaults.weight_num_owner_zones;
    if (!weight) return keep(servers, { skip: 'Resolved score weight to 0.00; no changes' });
    const owner = vmOf(o).owner_uuid;
    const counts = servers.map((s): [number, DapiServer] => [Object.values(s.vms ?? {}).filter((v) => v.owner_uuid === owner).length, s]);
    counts.sort((a, b) => weight * (a[0] - b[0]));
    const reasons: Reasons = {};
    scoreLinear(counts.map((c) => c[1]), Math.abs(weight), reasons);
    for (const [n, s] of counts) reasons[s.uuid] += `; ${n} owner zones found`;
    return keep(servers, reasons);
  },
};

export const scoreCurrentPlatform: Plugin = {
  name: 'Score servers running newer platforms more highly',
  run: (servers, o) => {
    if (servers.length <= 1) return keep(servers, { skip: 'One or fewer servers' });
    const weight = o.defaults.weight_current_platform;
    const dated = servers.map((s): [DapiServer, number] => {
      const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(String(s.current_platform ?? ''));
      return [s, m ? Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`) : 0];
    });
    const values = dated.map((d) => d[1]);
    const min = Math.min(...values);
    const max = Math.max(...values);
    const reasons: Reasons = {};
    for (const [s, v] of dated) {
      const delta = min === max ? weight : ((weight > 0 ? v - min : max - v) * Math.abs(weight)) / (max - min);
      s.score += delta;
      reasons[s.uuid] = `increased score by ${delta.toFixed(2)} to ${s.score.toFixed(2)}`;
    }
    return keep(servers, reasons);
  },
};

const WEEK_MS = 7 * 24 * 3600 * 1000;

export const scoreNextReboot: Plugin = {
  name: 'Score servers that will not be rebooted soon more highly',
  run: (servers, o) => {
    if (servers.length < 2) return keep(servers, { skip: 'One or fewer servers' });
    const buckets: DapiServer[][] = [];
    const unscheduled: DapiServer[] = [];
    const scheduled: DapiServer[] = [];
    let maxReboot = new Date(0).toISOString();
    for (const s of servers) {
      const next = s.next_reboot as string | undefined;
      if (!next || next < String(s.last_boot)) unscheduled.push(s);
      else {
        if (maxReboot < next) maxReboot = next;
        scheduled.push(s);
      }
    }
    if (unscheduled.length > 0) buckets.push(unscheduled);
    scheduled.sort((a, b) => (String(a.next_reboot) < String(b.next_reboot) ? 1 : -1));
    let bucket: DapiServer[] = [];
    let limit = new Date(Date.parse(maxReboot) - WEEK_MS).toISOString();
    for (const s of scheduled) {
      if (String(s.next_reboot) > limit) bucket.push(s);
      else {
        buckets.push(bucket);
        bucket = [s];
        limit = new Date(Date.parse(String(s.next_reboot)) - WEEK_MS).toISOString();
      }
    }
    if (bucket.length > 0) buckets.push(bucket);
    const weight = o.defaults.weight_next_reboot;
    if (weight < 0) buckets.reverse();
    const reasons: Reasons = {};
    const step = 1 / (buckets.length - 1);
    buckets.forEach((b, i) => {
      let delta = (buckets.length - 1 - i) * step * Math.abs(weight);
      if (!Number.isFinite(delta)) delta = Math.abs(weight);
      for (const s of b) {
        s.score += delta;
        reasons[s.uuid] = `increased score by ${delta.toFixed(2)} to ${s.score.toFixed(2)}`;
      }
    });
    return keep(servers, reasons);
  },
};

export const scoreUniformRandom: Plugin = {
  name: 'Increase server scores randomly',
  run: (servers, o) => {
    const spread = spreadOf(o);
    if (spread && spread !== 'random') return keep(servers, { skip: `pkg or default set to spread with: ${spread}` });
    const weight = spread === 'random' ? 2 : o.defaults.weight_uniform_random;
    if (!weight) return keep(servers, { skip: 'Resolved score weight to 0; no changes' });
    const shuffled = [...servers];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const reasons: Reasons = {};
    scoreLinear(shuffled, Math.abs(weight), reasons);
    return keep(servers, reasons);
  },
};
