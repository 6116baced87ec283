/**
 * A flood of connections on the CNs' cn-agent sockets (anyone on the admin network can open
 * them) must not take the descriptors the rest of the daemon needs: beyond the cap new CN
 * connections are closed at once, the control API keeps answering, the CNs keep reporting to
 * CNAPI, and tasks are served again as soon as the flood ends.
 */
import net from 'node:net';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

type Obj = Record<string, any>;

describe('daemon under a connection flood on the CN sockets', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;
  const flood: net.Socket[] = [];

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-flood-'));
    triton = await new RecordingTriton().start();
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { heartbeatIntervalMs: 300, startSpreadMs: 50 } }));
    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1', maxConnections: '20' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), plugins: [] });
    await daemon.start();
    const res = await fetch(`${daemon.controlAddress.url}/servers`, { method: 'POST', body: JSON.stringify({ count: 3 }) });
    expect(res.status).toBe(200);
    await waitFor(() => daemon.fleet.list().every((cn) => cn.registered), 10_000, 'CNs registered');
  });

  afterAll(async () => {
    for (const s of flood) s.destroy();
    await daemon?.stop();
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  const status = async (): Promise<Obj> => (await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj;

  it('closes CN connections beyond the cap while the control API, heartbeats and (after it) tasks go on', async () => {
    const addresses = daemon.fleet.list().map((cn) => cn.agentAddress!);
    const closed: Promise<void>[] = [];
    for (let i = 0; i < 150; i++) {
      const a = addresses[i % addresses.length]!;
      const s = net.connect(a.port, a.ip);
      s.on('error', () => undefined);
      closed.push(new Promise((r) => s.once('close', () => r())));
      flood.push(s);
    }
    // The connections beyond the cap are closed at once; the cap's worth stay open.
    await waitFor(async () => ((await status()).cnAgent.connections.refused as number) >= 100, 10_000, 'surplus connections refused');
    const during = await status();
    expect(during.cnAgent.connections.open).toBeLessThanOrEqual(20);
    expect(during.state).toBe('running');
    // Heartbeats still reach CNAPI meanwhile.
    const beats = triton.find('POST', /\/events\/heartbeat$/).length;
    await waitFor(() => triton.find('POST', /\/events\/heartbeat$/).length > beats + 3, 10_000, 'heartbeats during the flood');

    for (const s of flood) s.destroy();
    await Promise.all(closed);
    const cn = daemon.fleet.list()[0]!;
    const res = await fetch(`http://${cn.agentAddress!.ip}:${cn.agentAddress!.port}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body: JSON.stringify({ task: 'nop', params: {} }),
    });
    expect(res.status).toBe(200);
  });
});
