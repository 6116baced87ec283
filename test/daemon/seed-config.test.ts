/**
 * The fleet-composition settings resolve like every other: flag, then environment, then the
 * config file; `GET /config` shows where each came from.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/daemon/config.js';
import { noMdata } from '../../src/daemon/mdata.js';

describe('seed and profiles-dir settings', () => {
  it('come from the flag, the environment or the config file, in that order', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-seed-config-'));
    try {
      await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ seed: 'from-file', profilesDir: 'file-profiles' }));
      const fromFile = await resolveConfig({ flags: { dataDir }, env: {}, mdata: noMdata });
      expect(fromFile.seed).toBe('from-file');
      expect(fromFile.profilesDir).toBe(path.resolve('file-profiles'));
      expect(fromFile.sources).toMatchObject({ seed: 'file', profilesDir: 'file' });
      const fromEnv = await resolveConfig({ flags: { dataDir }, env: { MOCKCLOUD_SEED: 'from-env', MOCKCLOUD_PROFILES_DIR: '/p' }, mdata: noMdata });
      expect(fromEnv).toMatchObject({ seed: 'from-env', profilesDir: '/p', sources: { seed: 'env', profilesDir: 'env' } });
      const fromFlag = await resolveConfig({ flags: { dataDir, seed: '42' }, env: { MOCKCLOUD_SEED: 'from-env' }, mdata: noMdata });
      expect(fromFlag).toMatchObject({ seed: '42', sources: { seed: 'flag' } });
      await expect(resolveConfig({ flags: { dataDir, seed: 'x'.repeat(300) }, env: {}, mdata: noMdata })).rejects.toThrow(/at most 256 characters \(--seed \/ MOCKCLOUD_SEED\)/);
      await fsp.rm(path.join(dataDir, 'config.json'));
      const none = await resolveConfig({ flags: { dataDir }, env: {}, mdata: noMdata });
      expect(none.seed).toBeUndefined();
      expect(none.profilesDir).toBeUndefined();
    } finally {
      await fsp.rm(dataDir, { recursive: true, force: true });
    }
  });
});
