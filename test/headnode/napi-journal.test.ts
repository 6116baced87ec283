/**
 * The dev NAPI acknowledges a NIC change once it is on disk, as a journal entry (not a rewrite
 * of every NIC): a NAPI that dies without stopping (kill -9: nothing flushed) comes back with
 * every NIC it acknowledged, their addresses taken, and freed ones free, through sdc-clients'
 * NAPI client as VMAPI and the agents use it (sdc-napi lib/models/nic).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { NapiService } from '../../src/headnode/napi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { startNapi, type NapiEnv } from './helpers/napi-env.js';
import { call, closeClient, napiClient } from './helpers/sdc-clients.js';

const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';

describe('dev NAPI persistence through its journal', () => {
  let env: NapiEnv | undefined;
  let second: NapiService | undefined;

  afterEach(async () => {
    await second?.stop();
    second = undefined;
    await env?.close();
    env = undefined;
  });

  it('a NAPI that dies without stopping comes back with every NIC it acknowledged', async () => {
    env = await startNapi();
    const nets = await call<{ uuid: string; name: string }[]>(env.client, 'listNetworks', {});
    const admin = nets.find((n) => n.name === 'admin')!;
    const made: { mac: string; ip: string }[] = [];
    for (let i = 0; i < 30; i++) {
      made.push(await call(env.client, 'provisionNic', admin.uuid, { belongs_to_type: 'other', belongs_to_uuid: ADMIN, owner_uuid: ADMIN }));
    }
    // One deleted (its address freed), one updated.
    await call(env.client, 'deleteNic', made[3]!.mac);
    await call(env.client, 'updateNic', made[4]!.mac, { state: 'running' });
    const journal = path.join(env.dataDir, 'headnode', 'napi.journal');
    expect(existsSync(journal)).toBe(true);
    expect((await fsp.readFile(journal, 'utf8')).trim().split('\n').length).toBeGreaterThanOrEqual(30);

    // "kill -9": a second NAPI on the same data dir, the first never stopped (nothing flushed).
    const log = createQuietLogger('napi-journal');
    second = new NapiService({ log, store: new HeadnodeStore({ dataDir: env.dataDir, log }) });
    await second.start({ host: '127.0.0.1', port: 0 });
    const client = napiClient(second.url);
    try {
      const nics = await call<{ mac: string; ip: string; state: string }[]>(client, 'listNics', { belongs_to_uuid: ADMIN, limit: 1000 });
      const expected = made.filter((_, i) => i !== 3).map((n) => n.mac).sort();
      expect(nics.map((n) => n.mac).sort()).toEqual(expected);
      expect(nics.find((n) => n.mac === made[4]!.mac)!.state).toBe('running');
      // Addresses: the 29 held stay taken; the next one handed out is a fresh one, not a held one.
      const next = await call<{ ip: string }>(client, 'provisionNic', admin.uuid, { belongs_to_type: 'other', belongs_to_uuid: ADMIN, owner_uuid: ADMIN });
      expect(made.filter((_, i) => i !== 3).map((n) => n.ip)).not.toContain(next.ip);
    } finally {
      closeClient(client);
    }
  });
});
