/**
 * Who an event acts on: never the dev DC's headnode server (a mock CN whose sysinfo says
 * `Boot Parameters.headnode: "true"` and has a "Headnode ID", as a real headnode's does), and the same CNs again for
 * the same seed, whatever order the fleet lists them in.
 */
import { describe, expect, it } from 'vitest';
import { randomStream } from '../../src/common/seeded-random.js';
import { newUuid } from '../../src/common/uuid.js';
import { selectTargets } from '../../src/events/targets.js';
import { validateEvent } from '../../src/events/validate.js';
import type { MockCn } from '../../src/mockcn/types.js';
import { MockcloudError } from '../../src/common/errors.js';

function cn(opts: { headnode?: boolean; profile?: string } = {}): MockCn {
  return {
    uuid: newUuid(),
    sysinfo: opts.headnode ? { 'Boot Parameters': { headnode: 'true' }, 'Headnode ID': 0 } : { 'Boot Parameters': {} },
    profile: opts.profile ?? 'virtual',
  } as unknown as MockCn;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof MockcloudError ? `${err.statusCode} ${err.restCode}` : String(err);
  }
  return undefined;
}

describe('event targets', () => {
  const headnode = cn({ headnode: true });
  const computes = Array.from({ length: 20 }, (_, i) => cn(i < 5 ? { profile: 'big' } : {}));
  const fleet = [headnode, ...computes];

  it('never picks the headnode server: all, percent and count draw from the compute nodes only', () => {
    const r = randomStream('s', 'event-targets');
    expect(selectTargets(fleet, { all: true }, r)).toHaveLength(20);
    expect(selectTargets(fleet, { all: true }, r)).not.toContain(headnode);
    expect(selectTargets(fleet, { percent: 100 }, r)).not.toContain(headnode);
    expect(selectTargets(fleet, { count: 50 }, r)).toHaveLength(20);
    expect(codeOf(() => selectTargets(fleet, { servers: [headnode.uuid] }, r))).toBe('422 NoMatchingServers');
    expect(codeOf(() => selectTargets([headnode], { all: true }, r))).toBe('422 NoMatchingServers');
  });

  it('reads each CN\'s profile', () => {
    const r = randomStream(undefined, 'event-targets');
    expect(selectTargets(fleet, { profile: 'big' }, r)).toHaveLength(5);
    expect(selectTargets(fleet, { profile: 'virtual' }, r)).toHaveLength(15);
    expect(codeOf(() => selectTargets(fleet, { profile: 'tiny' }, r))).toBe('422 NoMatchingServers');
  });

  it('draws the same CNs for the same seed, whatever the fleet order; 10 % of 20 is 2', () => {
    const a = selectTargets(fleet, { percent: 10 }, randomStream('seed-1', 'event-targets'));
    const b = selectTargets([...fleet].reverse(), { percent: 10 }, randomStream('seed-1', 'event-targets'));
    expect(a).toHaveLength(2);
    expect(b.map((c) => c.uuid)).toEqual(a.map((c) => c.uuid));
  });
});

describe('event validation', () => {
  const bad = (body: unknown): string | undefined => codeOf(() => validateEvent(body));

  it('answers 400 InvalidArgument for what the contract does not allow', () => {
    expect(bad({ type: 'offline', target: { all: true } })).toBeUndefined();
    expect(bad({ type: 'offline', target: { all: true }, durationMs: 0 })).toBe('400 InvalidArgument');
    expect(bad({ type: 'reboot', target: { all: true }, durationMs: 1000 })).toBe('400 InvalidArgument');
    expect(bad({ type: 'flap', target: { all: true }, params: { periodMs: 1000, downMs: 1000 } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'task-fault', target: { all: true }, params: { task: '*' } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'task-fault', target: { all: true }, params: { task: '*', hang: true } })).toBeUndefined();
    expect(bad({ type: 'outbound-fault', target: { all: true }, params: { api: 'imgapi', delayMs: 5 } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'memory-pressure', target: { all: true }, params: { availableMiB: 1, percentUsed: 50 } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'zpool-fill', target: { percent: 0 }, params: { percent: 90 } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'vm-crash', target: { all: true }, params: { vms: ['x'] } })).toBe('400 InvalidArgument');
    expect(bad({ type: 'offline', target: { all: true }, bogus: 1 })).toBe('400 InvalidArgument');
  });

  it('fills in the defaults the docs promise', () => {
    expect(validateEvent({ type: 'vm-crash', target: { all: true } }).params).toEqual({ exitStatus: 1 });
    expect(validateEvent({ type: 'flap', target: { all: true }, params: { periodMs: 1000 } }).params).toEqual({ periodMs: 1000, downMs: 500 });
  });
});
