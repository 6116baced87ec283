/**
 * Seeded runs replay exactly: the same event requests, on two engines with the same seed and
 * the same fleet, give the same event log apart from times (issue 16, "Seeded runs"). The
 * engine runs here on stand-in CNs (the events used only set conditions on them).
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonHttpClient } from '../../src/common/http-client.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { EventsEngine } from '../../src/events/index.js';
import type { MockCn } from '../../src/mockcn/types.js';
import { Scheduler } from '../../src/runtime/scheduler.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => fsp.rm(d, { recursive: true, force: true })));
});

function fleetOf(uuids: string[]): MockCn[] {
  return uuids.map((uuid) => ({ uuid, sysinfo: { 'MiB of Memory': '65536' }, markStatusDirty: () => undefined }) as unknown as MockCn);
}

async function run(seed: string | undefined, uuids: string[]): Promise<unknown[]> {
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-replay-'));
  dirs.push(dataDir);
  const scheduler = new Scheduler();
  scheduler.start();
  const http = new JsonHttpClient();
  const cns = fleetOf(uuids);
  const engine = new EventsEngine({
    log: createQuietLogger(),
    scheduler,
    http,
    dataDir,
    ...(seed !== undefined ? { seed } : {}),
    urls: {},
    fleet: { list: () => [...cns].reverse(), get: (u) => cns.find((c) => c.uuid === u) },
  });
  await engine.start();
  try {
    await engine.startEvent({ type: 'memory-pressure', target: { percent: 30 }, params: { percentUsed: 80 } });
    await engine.startEvent({ type: 'slow-heartbeat', target: { count: 2 }, params: { lateMs: 7000 }, source: { scenario: 's.yaml', step: 2 } });
    await engine.mark({ label: 'half way' });
    await engine.startEvent({ type: 'memory-pressure', target: { count: 3 }, params: { availableMiB: 100 }, seed: 'other' });
    await engine.endAll();
  } finally {
    await engine.stop();
    scheduler.stop();
    http.close();
  }
  const lines = (await fsp.readFile(path.join(dataDir, 'events.jsonl'), 'utf8')).trim().split('\n');
  return lines.map((l) => {
    const { time: _time, ...rest } = JSON.parse(l) as Record<string, unknown>;
    return rest;
  });
}

describe('seeded event runs', () => {
  const uuids = Array.from({ length: 10 }, () => newUuid());

  it('write the same log, times aside, for the same seed; another seed draws otherwise', async () => {
    const a = await run('rack-7', uuids);
    const b = await run('rack-7', uuids);
    expect(a).toHaveLength(7);
    expect(b).toEqual(a);
    const c = await run('rack-8', uuids);
    expect(c.map((l) => (l as { servers?: string[] }).servers)).not.toEqual(a.map((l) => (l as { servers?: string[] }).servers));
  });

  it('without a seed, event ids are fresh each run', async () => {
    const a = await run(undefined, uuids);
    const b = await run(undefined, uuids);
    expect((a[0] as { id: string }).id).not.toBe((b[0] as { id: string }).id);
  });
});
