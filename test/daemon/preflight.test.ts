/**
 * The daemon's start-up checks (src/daemon/preflight.ts), as a first run relies on them: a
 * cmon-agent port held by someone else moves to a free one with the dev headnode and is a hard
 * error naming --cmon-port against a real Triton; a taken control port or pinned headnode port
 * is refused naming its flag; and a refused start leaves the data dir as it was (not even
 * created). Then --headnode-ports: the dev headnode keeps its addresses across a restart.
 *
 * Ports are held by the test itself (listening on port 0 and taking what it got), never
 * assumed free or taken.
 */
import { existsSync, promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig, type DaemonConfig } from '../../src/daemon/config.js';
import { parseHeadnodePorts, type RawSettings } from '../../src/daemon/settings.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { preflight } from '../../src/daemon/preflight.js';
import { pinnablePorts } from '../common/helpers/ports.js';

let tmp: string;
let dataDir: string;
const held: net.Server[] = [];

/** A port this test holds on `ip` until the test ends. */
async function holdPort(ip = '127.0.0.1'): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, ip, () => resolve());
  });
  held.push(server);
  return (server.address() as net.AddressInfo).port;
}

function config(flags: RawSettings, env: NodeJS.ProcessEnv = {}): Promise<DaemonConfig> {
  return resolveConfig({ flags: { dataDir, ...flags }, env, mdata: noMdata });
}

beforeEach(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-preflight-'));
  dataDir = path.join(tmp, 'data');
});

afterEach(async () => {
  for (const s of held.splice(0)) await new Promise((r) => s.close(r));
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('preflight: cmon-agent port', () => {
  it('with the dev headnode, a default port someone holds moves to a free one, and says so', async () => {
    const port = await holdPort();
    // A config whose port is the default one (as 9163 is when no flag, env or file names it).
    const c = await config({});
    c.cmonPort = port;
    expect(c.sources.cmonPort).toBe('default');
    const r = await preflight(c, { devMode: true });
    expect(r.config.cmonPort).toBe(0);
    expect(r.notices).toHaveLength(1);
    expect(r.notices[0]).toContain(`127.0.0.1:${port} is in use`);
    expect(r.notices[0]).toContain('--cmon-port');
    expect(c.cmonPort).toBe(port); // the caller's object is left alone
  });

  it('with the dev headnode, a port the user chose stays theirs: a clear error naming --cmon-port', async () => {
    const port = await holdPort();
    const c = await config({ cmonPort: port });
    await expect(preflight(c, { devMode: true })).rejects.toThrow(new RegExp(`cmon-agent cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use.*--cmon-port`));
  });

  it('against a real Triton a taken port is a hard error naming --cmon-port (CMON scrapes 9163 only)', async () => {
    const port = await holdPort();
    const c = await config({ cnapiUrl: 'http://127.0.0.1:9' });
    c.cmonPort = port;
    expect(c.sources.cmonPort).toBe('default');
    const err = await preflight(c, { devMode: false }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/cmon-agent cannot listen on .*: the address is already in use/);
    expect(err?.message).toMatch(/CMON scrapes every compute node on port 9163 only/);
    expect(err?.message).toMatch(/--cmon-port \(env MOCKCLOUD_CMON_PORT\)/);
    // The errno only in parentheses after the words, never alone.
    expect(err?.message).not.toMatch(/(^|[^(])EADDRINUSE/);
  });

  it('a free port is kept as it is, with nothing to say', async () => {
    const [port] = await pinnablePorts(1);
    const c = await config({ cmonPort: port! });
    const r = await preflight(c, { devMode: false });
    expect(r.config.cmonPort).toBe(port);
    expect(r.notices).toEqual([]);
  });
});

describe('preflight: other addresses and the data dir', () => {
  it('a taken control port is refused naming --control-port', async () => {
    const port = await holdPort();
    const c = await config({ controlPort: port, cmonPort: 0 });
    await expect(preflight(c, { devMode: true })).rejects.toThrow(/control API cannot listen on 127\.0\.0\.1:\d+: the address is already in use \(another process listens there\) \(EADDRINUSE\); choose another port with --control-port/);
  });

  it('a taken pinned headnode port is refused naming --headnode-ports', async () => {
    const port = await holdPort();
    const [a, b, d, e] = await pinnablePorts(4);
    const c = await config({ headnodePorts: `${a},${b},${port},${d},${e}`, cmonPort: 0 });
    await expect(preflight(c, { devMode: true })).rejects.toThrow(new RegExp(`dev headnode's NAPI cannot listen on 127\\.0\\.0\\.1:${port}.*--headnode-ports`));
  });

  it('a data dir another live daemon uses is refused', async () => {
    await fsp.mkdir(dataDir, { recursive: true });
    // This test runner stands in for the other daemon: a live pid that is not the checker's.
    const other = { pid: process.ppid, state: 'running', control: { url: 'http://127.0.0.1:1' } };
    await fsp.writeFile(path.join(dataDir, 'daemon.json'), JSON.stringify(other));
    const c = await config({ cmonPort: 0 });
    await expect(preflight(c, { devMode: true })).rejects.toThrow(/another mockcloud daemon \(pid \d+, http:\/\/127\.0\.0\.1:1\) is using .*--data-dir/);
  });

  it('a daemon refused at start has written nothing: no data dir, no dev DC', async () => {
    const port = await holdPort();
    const c = await config({ cmonPort: port });
    const daemon = new Daemon({ config: c, log: createQuietLogger(), embeddedHeadnode: {} });
    await expect(daemon.start()).rejects.toThrow(/--cmon-port/);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('--headnode-ports', () => {
  it('takes a base port (CNAPI, VMAPI, NAPI, IMGAPI, SAPI, FWAPI and its updates, PAPI in a row), five ports, seven or eight, and refuses the rest', () => {
    expect(parseHeadnodePorts('24000')).toEqual({ cnapi: 24000, vmapi: 24001, napi: 24002, imgapi: 24003, sapi: 24004, fwapi: 24005, fwapiFast: 24006, papi: 24007 });
    expect(parseHeadnodePorts('1,2,3,4,5,6,7')).toEqual({ cnapi: 1, vmapi: 2, napi: 3, imgapi: 4, sapi: 5, fwapi: 6, fwapiFast: 7 });
    expect(parseHeadnodePorts('1,2,3,4,5,6,7,8')).toEqual({ cnapi: 1, vmapi: 2, napi: 3, imgapi: 4, sapi: 5, fwapi: 6, fwapiFast: 7, papi: 8 });
    expect(parseHeadnodePorts('5001, 5002,5003 ,5000,5004')).toEqual({ cnapi: 5001, vmapi: 5002, napi: 5003, imgapi: 5000, sapi: 5004 });
    for (const bad of ['0', '65529', 'x', '1,2,3', '1,2,3,4', '1,2,3,4,5,6', '1,2,3,4,5,6,7,8,9', '1,1,2,3,4', '1,2,3,4,70000']) {
      expect(() => parseHeadnodePorts(bad), bad).toThrow(/--headnode-ports/);
    }
  });

  it('pins the dev headnode: a restarted daemon answers on the same eight addresses', async () => {
    const ports = await pinnablePorts(8);
    const start = async () => {
      const c = await config({ headnodePorts: ports.join(','), cmonPort: 0, controlPort: 0 });
      const d = new Daemon({ config: c, log: createQuietLogger(), embeddedHeadnode: {} });
      await d.start();
      return d;
    };
    const first = await start();
    const urls = { ...first.config.urls };
    await first.stop();
    const second = await start();
    try {
      expect(second.config.urls).toEqual(urls);
      expect(urls.cnapi).toBe(`http://127.0.0.1:${ports[0]}`);
      expect(urls.imgapi).toBe(`http://127.0.0.1:${ports[3]}`);
      expect(urls.sapi).toBe(`http://127.0.0.1:${ports[4]}`);
      expect(urls.fwapi).toBe(`http://127.0.0.1:${ports[5]}`);
      expect(urls.fwapiFast).toBe(`tcp://127.0.0.1:${ports[6]}`);
      expect(urls.papi).toBe(`http://127.0.0.1:${ports[7]}`);
      const ping = await fetch(`${second.config.urls.cnapi}/ping`);
      expect(ping.status).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
