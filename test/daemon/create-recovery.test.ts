/**
 * A server creation cut short by a crash after its marker was dropped but before the dir was
 * published (sysinfo.json staged, admin NIC allocated in NAPI): the next start releases that
 * NIC, so NAPI holds no admin NIC of a CN that does not exist.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { creatingDir, SYSINFO_FILE } from '../../src/mockcn/layout.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac } from '../../src/mockcn/sysinfo-template.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { NAPI: any };
const log = createQuietLogger('create-recovery-test');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function call(client: any, method: string, ...args: unknown[]): Promise<any> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: { statusCode?: number } | null, result: unknown) => {
      if (err?.statusCode === 404) resolve(undefined);
      else if (err) reject(err);
      else resolve(result);
    });
  });
}

describe('recovering an interrupted server creation', () => {
  let dataDir: string | undefined;
  let daemon: Daemon | undefined;
  afterEach(async () => {
    await daemon?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('releases the admin NIC named by a staged sysinfo.json that has no marker any more', async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-recovery-'));
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const start = async (): Promise<Daemon> => {
      const d = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
      await d.start();
      return d;
    };
    daemon = await start();
    const napi = new sdc.NAPI({ url: daemon.config.urls.napi, log, agent: false });
    const mac = randomMockMac();
    const nic = await call(napi, 'provisionNic', 'admin', { belongs_to_type: 'other', belongs_to_uuid: DEFAULT_ADMIN_UUID, owner_uuid: DEFAULT_ADMIN_UUID, mac, nic_tags_provided: ['admin'] });
    expect(nic?.mac).toBe(mac);
    await daemon.stop();
    daemon = undefined;

    // What a crash inside finishServerCreation leaves: the staging dir, sysinfo, no marker.
    const uuid = newUuid();
    const staging = creatingDir(dataDir, uuid);
    await fsp.mkdir(staging, { recursive: true });
    const sysinfo = buildSysinfo({ uuid, profile: getProfile(undefined), datacenterName: 'coal', platform: '20210826T002459Z', adminMac: mac, adminIp: nic.ip, extraMac: randomMockMac() });
    await fsp.writeFile(path.join(staging, SYSINFO_FILE), JSON.stringify(sysinfo));

    daemon = await start();
    const napi2 = new sdc.NAPI({ url: daemon.config.urls.napi, log, agent: false });
    expect(await call(napi2, 'getNic', mac.replace(/:/g, ''))).toBeUndefined();
    expect(await fsp.stat(staging).then(() => true, () => false)).toBe(false);
    expect(daemon.fleet.get(uuid)).toBeUndefined();
  }, 30_000);
});
