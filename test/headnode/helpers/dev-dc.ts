/**
 * A small dev DC for end-to-end tests: the embedded dev headnode and a daemon hosting a few
 * mock CNs, all on loopback with ports from the OS, driven through sdc-clients. The
 * reporter's timings are shortened (config, not code) so CNs register in moments.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../../src/common/log.js';
import { resolveConfig } from '../../../src/daemon/config.js';
import { Daemon } from '../../../src/daemon/daemon.js';
import { noMdata } from '../../../src/daemon/mdata.js';
import { Headnode, type HeadnodeUrls } from '../../../src/headnode/headnode.js';
import { createServers } from '../../daemon/helpers/control.js';
import { call, closeClient, cnapiClient, waitFor, type Client } from './sdc-clients.js';

const TIMINGS = { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 200, sysinfoBackoff: { minMs: 50, maxMs: 500 } };

export type Obj = Record<string, any>;

export interface DevDc {
  dataDir: string;
  headnode: Headnode;
  daemon: Daemon;
  urls: HeadnodeUrls;
  cnapi: Client;
  /** The CNs' uuids, as CNAPI lists them (all running). */
  servers: string[];
  close(): Promise<void>;
}

export interface DevDcOptions {
  /** The dev CNAPI's heartbeat reconciler (short, to see `unknown` within a test). */
  heartbeat?: { periodMs?: number; lifetimeMs?: number };
  /** A timing file's text: the daemon runs on it (`--timing`), seeded by `seed`. */
  timingYaml?: string;
  seed?: string;
}

/**
 * The dev headnode and a daemon on it that has been asked for `cnCount` CNs, without waiting
 * for them to register (for a test whose subject is the registration itself).
 */
export async function openDevDc(cnCount: number, opts: DevDcOptions = {}): Promise<Omit<DevDc, 'servers'>> {
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-devdc-'));
  const log = createQuietLogger();
  const headnode = new Headnode({ dataDir, log, ...(opts.heartbeat ? { heartbeat: opts.heartbeat } : {}) });
  let daemon: Daemon | undefined;
  let cnapi: Client | undefined;
  const close = async (): Promise<void> => {
    closeClient(cnapi);
    await daemon?.stop();
    await headnode.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  };
  try {
    const urls = await headnode.start();
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));
    const timingFile = path.join(dataDir, 'timing.yaml');
    if (opts.timingYaml !== undefined) await fsp.writeFile(timingFile, opts.timingYaml);
    const config = await resolveConfig({
      flags: {
        dataDir,
        cnapiUrl: urls.cnapi,
        vmapiUrl: urls.vmapi,
        napiUrl: urls.napi,
        imgapiUrl: urls.imgapi,
        bindIp: '127.0.0.1',
        datacenterName: 'coal',
        cmonPort: 0,
        ...(opts.timingYaml !== undefined ? { timing: timingFile } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log });
    await daemon.start();
    cnapi = cnapiClient(urls.cnapi);
    await createServers(daemon, { count: cnCount });
    return { dataDir, headnode, daemon, urls, cnapi, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

/**
 * openDevDc, then wait until CNAPI lists all `cnCount` CNs running and set up, each with a
 * heartbeat: a CN is `running` as soon as CNAPI takes its sysinfo, but its cn-agent takes
 * tasks (404 before) only once the answer is back, and it sends heartbeats from then on.
 */
export async function startDevDc(cnCount: number, opts: DevDcOptions = {}): Promise<DevDc> {
  const dc = await openDevDc(cnCount, opts);
  try {
    const servers = await waitFor(
      async () => {
        // DAPI places only on CNs whose status report has come in (memory), not just a heartbeat.
        const list = await call<Obj[]>(dc.cnapi, 'listServers', { extras: 'last_heartbeat,memory' });
        const running = list.filter(
          (s) =>
            s.status === 'running' &&
            s.setup === true &&
            s.headnode !== true &&
            typeof s.last_heartbeat === 'string' &&
            typeof s.memory_available_bytes === 'number',
        );
        return running.length === cnCount ? running.map((s) => s.uuid as string) : undefined;
      },
      60_000,
      100,
    );
    return { ...dc, servers };
  } catch (err) {
    await dc.close().catch(() => undefined);
    throw err;
  }
}

/** POST a CNAPI route that answers `{id}`, then wait for the task; returns the finished task. */
export async function cnapiTask(cnapi: Client, urlPath: string, body: unknown, timeoutS = 60): Promise<Obj> {
  const started = await new Promise<{ id: string }>((resolve, reject) => {
    cnapi.post(urlPath, body, (err: Error | null, obj: { id: string }) => (err ? reject(err) : resolve(obj)));
  });
  if (typeof started?.id !== 'string') throw new Error(`${urlPath} answered no task id: ${JSON.stringify(started)}`);
  return call<Obj>(cnapi, 'waitTask', started.id, { timeout: timeoutS });
}

/** The error message a failed CNAPI task recorded. */
export function taskError(task: Obj): string | undefined {
  const e = (task.history as Obj[] | undefined)?.find((h) => h.name === 'error')?.event?.error;
  return typeof e === 'string' ? e : e?.message;
}
