/**
 * A flood of idle connections on the CNs' cn-agent sockets and on the control API (anyone on
 * the admin network, any local process, can open them) must not stop the daemon's work for
 * clients that send requests promptly (issue 24): at a cap the oldest idle connections are
 * shed to make room, so tasks to every CN and /status keep answering while the flood goes on
 * and reconnects, heartbeats keep reaching CNAPI, and the cap is reported at WARN, once.
 * A scaled-down flood against small caps (tools/bench/drill.ts runs the full-size one).
 */
import net from 'node:net';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import bunyan from 'bunyan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/daemon/config.js';
import { MAX_CLI_SOCKET_CONNECTIONS } from '../../src/daemon/control-api.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';
import { runCli } from '../cli/helpers/run-cli.js';

type Obj = Record<string, any>;

/** Caps small enough that a few hundred sockets flood them. */
const CN_CAP = 60;
const CONTROL_CAP = 40;

describe('daemon under an idle-connection flood', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;
  const warnings = new bunyan.RingBuffer({ limit: 500 });
  const flood = new Set<net.Socket>();
  /** Flood sockets the daemon closed, by port. */
  const closed = new Map<number, number>();

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-flood-'));
    triton = await new RecordingTriton().start();
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { heartbeatIntervalMs: 300, startSpreadMs: 50 } }));
    const config = await resolveConfig({
      flags: {
        dataDir,
        cnapiUrl: triton.url,
        napiUrl: triton.url,
        bindIp: '127.0.0.1',
        maxConnections: String(CN_CAP),
        maxControlConnections: String(CONTROL_CAP),
      },
      env: {},
      mdata: noMdata,
    });
    const log = bunyan.createLogger({ name: 'flood-test', streams: [{ level: 'warn', type: 'raw', stream: warnings }] });
    daemon = new Daemon({ config, log, plugins: [] });
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

  /** Idle sockets to these addresses, reopened as soon as the daemon closes them, until stopped. */
  function startFlood(targets: { ip: string; port: number }[], perTarget: number): () => void {
    let running = true;
    const open = (t: { ip: string; port: number }): void => {
      if (!running) return;
      const s = net.connect(t.port, t.ip);
      flood.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        flood.delete(s);
        if (running) closed.set(t.port, (closed.get(t.port) ?? 0) + 1);
        // A client that reconnects at once, as the drill's did.
        setTimeout(() => open(t), 5);
      });
    };
    for (const t of targets) for (let i = 0; i < perTarget; i++) open(t);
    return () => {
      running = false;
    };
  }

  it('keeps serving tasks to every CN and /status while idle sockets flood both caps, and says so at WARN once', async () => {
    const cns = daemon.fleet.list();
    const control = new URL(daemon.controlAddress.url);
    const stop = startFlood(
      [...cns.map((cn) => cn.agentAddress!), { ip: control.hostname, port: Number(control.port) }],
      150, // 450 to the CN sockets (cap 60), 150 to the control API (cap 40)
    );
    try {
      const shed = async (): Promise<number> => ((await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj).cnAgent.connections.shed.idle;
      await waitFor(async () => (await shed()) > 100, 10_000, 'the flood shed at the CN sockets');
      const beats = triton.find('POST', /\/events\/heartbeat$/).length;
      // Prompt clients meanwhile: a task to each CN and a /status, round after round.
      const failures: string[] = [];
      const slowest: number[] = [];
      for (let round = 0; round < 10; round++) {
        const t0 = Date.now();
        const answers = await Promise.all([
          ...cns.map(async (cn) => {
            const r = await fetch(`http://${cn.agentAddress!.ip}:${cn.agentAddress!.port}/tasks`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
              body: JSON.stringify({ task: 'nop', params: {} }),
            }).catch((err: Error) => ({ status: 0, statusText: err.message }));
            return `${cn.uuid} task: ${r.status}`;
          }),
          fetch(`${daemon.controlAddress.url}/status`).then(
            (r) => `status: ${r.status}`,
            (err: Error) => `status: ${err.message}`,
          ),
        ]);
        slowest.push(Date.now() - t0);
        failures.push(...answers.filter((a) => !/: 200$/.test(a)));
      }
      expect(failures).toEqual([]);
      // The CLI takes its own way in (the control socket, owner only), not the flooded port.
      const cli = await runCli(['status', '--data-dir', dataDir], { timeoutMs: 30_000 });
      expect(cli.code, cli.stderr).toBe(0);
      expect(((await fsp.stat(path.join(dataDir, 'control.sock'))).mode & 0o777).toString(8)).toBe('600');
      // A CLI connection that is slow to send its request (a busy machine) outlives the flood's
      // shedding: the TCP port sheds its own connections, never the socket's.
      const held = net.connect(path.join(dataDir, 'control.sock'));
      const heldText = new Promise<string>((resolve) => {
        let text = '';
        held.on('data', (b) => (text += b.toString()));
        held.on('error', (err) => resolve(`error: ${err.message}`));
        held.on('close', () => resolve(text));
      });
      await new Promise<void>((resolve) => held.once('connect', () => resolve()));
      const from = closed.get(Number(control.port)) ?? 0;
      await waitFor(() => (closed.get(Number(control.port)) ?? 0) > from + 3 * CONTROL_CAP, 10_000, 'the flood shed the whole control cap thrice');
      held.write('GET /ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      expect((await heldText).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
      // Heartbeats still reach CNAPI during the flood.
      await waitFor(() => triton.find('POST', /\/events\/heartbeat$/).length > beats + 3, 10_000, 'heartbeats during the flood');
    } finally {
      stop();
      for (const s of flood) s.destroy();
    }
    const status = (await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj;
    expect(status.cnAgent.connections.shed.idle).toBeGreaterThan(100);
    expect(status.cnAgent.connections.refused).toBe(0);
    // One WARN per listener for the whole flood (at most one a minute), with the counts.
    const caps = (warnings.records as Obj[]).filter((r) => /connection cap of \d+ reached/.test(String(r.msg)));
    expect(caps.filter((r) => /cn-agent/.test(r.msg))).toHaveLength(1);
    expect(caps.filter((r) => /mockcloud-control/.test(r.msg))).toHaveLength(1);
    expect(caps[0]!.connections).toMatchObject({ maxConnections: expect.any(Number), shedIdle: expect.any(Number) });
  }, 60_000);
});

describe("the CLI's control socket while the control API's TCP port is flooded", () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;
  const flood = new Set<net.Socket>();
  let running = true;

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-flood-cli-'));
    triton = await new RecordingTriton().start();
    // The control port's cap as the daemon has it (1,024): above the socket's own.
    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: bunyan.createLogger({ name: 'flood-cli-test', level: 'fatal' }), plugins: [] });
    await daemon.start();
  });

  afterAll(async () => {
    running = false;
    for (const s of flood) s.destroy();
    await daemon?.stop();
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  /**
   * GET `urlPath` over the Unix socket on a new connection, as the CLI does, its request sent
   * `pauseMs` after the connection is made (a CLI on a busy machine is that slow, and a busy
   * daemon reads it that late): the status code, or what went wrong.
   */
  function socketGet(urlPath: string, pauseMs: number): Promise<string> {
    return new Promise((resolve) => {
      const sock = net.connect(path.join(dataDir, 'control.sock'));
      let text = '';
      sock.setTimeout(30_000, () => sock.destroy(new Error('no answer in 30 s')));
      sock.on('data', (b) => (text += b.toString()));
      sock.on('error', (err) => resolve(err.message));
      sock.on('close', () => resolve(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? `closed after ${JSON.stringify(text.slice(0, 40))}`));
      sock.once('connect', () => {
        setTimeout(() => sock.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`), pauseMs);
      });
    });
  }

  it('answers every request on the socket while idle sockets hold the TCP port, and that port closes none under its cap', async () => {
    const control = new URL(daemon.controlAddress.url);
    let closedByDaemon = 0;
    const open = (): void => {
      if (!running) return;
      const s = net.connect(Number(control.port), control.hostname);
      flood.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        flood.delete(s);
        if (running) closedByDaemon++;
        setTimeout(open, 5);
      });
    };
    // More idle sockets than the CLI socket's slots, fewer than the TCP port's cap (1,024): a
    // guard that took the TCP port's connections as its own would shed them, and the CLI's.
    for (let i = 0; i < MAX_CLI_SOCKET_CONNECTIONS + 150; i++) open();
    try {
      await waitFor(() => flood.size >= MAX_CLI_SOCKET_CONNECTIONS + 150, 10_000, 'the flood connected');
      // Accepted in order: once a later connection is answered, the flood's are in the daemon.
      expect((await fetch(`${daemon.controlAddress.url}/status`)).status).toBe(200);
      const answers: string[] = [];
      for (let i = 0; i < 8; i++) answers.push(await socketGet(i % 2 ? '/status' : '/ping', 400));
      expect(answers.filter((a) => a !== '200')).toEqual([]);
      expect(closedByDaemon).toBe(0);
    } finally {
      running = false;
      for (const s of flood) s.destroy();
    }
  }, 60_000);
});
