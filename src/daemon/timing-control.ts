/**
 * The daemon's timing through the control API: `GET /timing` shows the profile in force and
 * the events' adjustments; `PUT /timing` replaces the daemon's profile with a built-in one
 * (`{"name": "smartos"}`), a timing file (`{"file": "/path/slow.yaml"}`) or a timing file's
 * text (`{"yaml": "...", "name"?: "..."}`). A bad timing is refused whole with a 400 naming
 * every problem at its line, and the daemon keeps the timing it had.
 */
import path from 'node:path';
import { MockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { BUILTIN_PROFILES } from '../timing/builtin.js';
import { formatProblems, parseTimingFile } from '../timing/file.js';
import { forBrand, isZero, type Figure } from '../timing/figure.js';
import type { TimingProfile } from '../timing/profile.js';
import { resolveTiming } from '../timing/resolve.js';
import type { Timing } from '../timing/timing.js';

function bad(message: string): MockcloudError {
  return new MockcloudError('BadRequest', message, { restCode: 'InvalidArgument' });
}

/** A profile as `GET /timing` and `mockcloud timing` show it: every figure that takes time. */
export function describeProfile(p: TimingProfile): Record<string, unknown> {
  const figures: Record<string, string> = {};
  for (const [key, f] of p.figures) if (!isZero(f)) figures[key] = describeFigure(f);
  return { name: p.name, description: p.description, source: p.source, instant: p.instant, figures };
}

export function describeFigure(f: Figure): string {
  const ms = (n: number): string => (n >= 1000 ? `${Number((n / 1000).toFixed(3))}s` : `${Math.round(n)}ms`);
  const s = f.spread;
  let text =
    s.kind === 'fixed' ? ms(s.ms) : s.kind === 'uniform' ? `${ms(s.minMs)}-${ms(s.maxMs)}` : `p50 ${ms(s.p50Ms)} p99 ${ms(s.p99Ms)}`;
  if (f.rateBytesPerSecond !== undefined) text += ` + bytes at ${Number((f.rateBytesPerSecond / 1024 / 1024).toFixed(1))} MiB/s`;
  for (const brand of Object.keys(f.brands ?? {})) text += `; ${brand}: ${describeFigure(forBrand(f, brand))}`;
  return text;
}

export function describeTiming(timing: Timing): Record<string, unknown> {
  return {
    profile: describeProfile(timing.profile),
    adjustments: timing.activeAdjustments.map((a) => ({
      ...(a.servers ? { servers: [...a.servers] } : {}),
      ...(a.vms ? { vms: [...a.vms] } : {}),
      ...(a.keys ? { keys: a.keys } : {}),
      ...(a.factor !== undefined ? { factor: a.factor } : {}),
      ...(a.profile ? { profile: a.profile.name } : {}),
    })),
  };
}

/** `PUT /timing`: the new profile, or a 400 (the daemon's timing untouched). */
export async function readTimingBody(body: unknown, baseDir: string): Promise<TimingProfile> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw bad('the timing must be a JSON object: {"name": "smartos"}, {"file": "/path/timing.yaml"} or {"yaml": "..."}');
  }
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !['name', 'file', 'yaml'].includes(k));
  if (unknown.length > 0) throw bad(`unknown key(s) ${unknown.join(', ')}; a timing takes name, file or yaml`);
  const given = ['file', 'yaml'].filter((k) => b[k] !== undefined);
  if (given.length > 1) throw bad('give a timing file or its text, not both');
  if (typeof b.yaml === 'string') {
    const name = typeof b.name === 'string' ? b.name : 'timing';
    const res = parseTimingFile(b.yaml, `${name}.yaml`, BUILTIN_PROFILES);
    if (!res.ok) throw bad(`the timing is not valid:\n${formatProblems(`${name}.yaml`, res.problems)}`);
    return res.profile;
  }
  if (b.yaml !== undefined) throw bad('yaml must be the text of a timing file');
  const spec = b.file ?? b.name;
  if (typeof spec !== 'string' || spec === '') throw bad('name must be a built-in timing profile (instant, smartos), or give file or yaml');
  if (b.file === undefined && !BUILTIN_PROFILES.has(spec)) {
    throw bad(`no built-in timing profile ${JSON.stringify(spec)}; known: ${[...BUILTIN_PROFILES.keys()].join(', ')}`);
  }
  try {
    return await resolveTiming(b.file === undefined ? spec : path.resolve(baseDir, spec), baseDir);
  } catch (err) {
    throw bad((err as Error).message);
  }
}

export async function setTiming(timing: Timing, body: unknown, baseDir: string, log: Logger): Promise<Record<string, unknown>> {
  const profile = await readTimingBody(body, baseDir);
  const previous = timing.profile.name;
  timing.setProfile(profile);
  log.info({ timing: profile.name, source: profile.source, previous }, 'timing changed');
  return describeTiming(timing);
}
