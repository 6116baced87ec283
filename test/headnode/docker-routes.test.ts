/**
 * CNAPI's docker endpoints end to end: sdc-clients' CNAPI class (dockerExec, dockerCopy,
 * dockerStats, dockerBuild, as sdc-docker lib/backends/sdc/containers.js and build.js call
 * them) against the dev headnode's CNAPI, which routes them as sdc-cnapi
 * lib/endpoints/vms.js does to a daemon's mock CN; then the returned host/port is read as
 * sdc-docker reads it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { connect, execStream, jsonLines, makeTar, readUntilClose, runBuildClient, tarEntries } from '../cn-agent/docker-client.js';
import { postTask, provisionParams } from '../cn-agent/helpers.js';
import { startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, callError, type Client } from './helpers/sdc-clients.js';

describe('dev CNAPI docker routes, through sdc-clients', () => {
  let dc: DevDc;
  let cnapi: Client;
  let server: string;
  let agent: { url: string; uuid: string };
  let vm: string;
  let stoppedVm: string;

  beforeAll(async () => {
    dc = await startDevDc(1);
    cnapi = dc.cnapi;
    const s = await call<Obj>(cnapi, 'getServer', dc.servers[0]);
    server = s.uuid;
    agent = { uuid: server, url: `http://${s.sysinfo['CN Agent IP']}:${s.sysinfo['CN Agent Port']}` };
    // The containers, made on the CN as VMAPI's provision would have them made.
    const params = provisionParams(server, { hostname: 'ctr-1' });
    expect((await postTask(agent, 'machine_create', params)).status).toBe(200);
    vm = params.uuid as string;
    const stopped = provisionParams(server);
    await postTask(agent, 'machine_create', stopped);
    await postTask(agent, 'machine_shutdown', { uuid: stopped.uuid });
    stoppedVm = stopped.uuid as string;
  }, 120_000);

  afterAll(async () => {
    await dc?.close();
  }, 60_000);

  it('dockerExec: {host, port} of the CN, whose stream carries the output and exit code', async () => {
    const res = await call<Obj>(cnapi, 'dockerExec', server, vm, {
      command: { AttachStdin: false, AttachStdout: true, AttachStderr: true, Tty: false, Cmd: ['uname', '-s'] },
    });
    expect(res.host).toBe('127.0.0.1');
    const { frames } = await execStream(res.host, res.port);
    expect(frames).toEqual([
      { type: 'stdout', data: 'SunOS\n' },
      { type: 'end', data: { code: 0, signal: null } },
    ]);
    // Detached: nothing to connect to.
    const detached = await call<Obj>(cnapi, 'dockerExec', server, vm, { command: { Cmd: ['true'], Detach: true } });
    expect(detached.port).toBeUndefined();
  });

  it('dockerExec on a stopped container: CNAPI 500 with the task error', async () => {
    const err = await callError(cnapi, 'dockerExec', server, stoppedVm, { command: { Cmd: ['true'] } });
    expect(err.statusCode).toBe(500);
    expect(err.body?.message).toContain('docker_exec: VM is not running, cannot exec');
  });

  it('dockerCopy: the path stat and a tar stream of the file; missing files are 404 FileNotFound', async () => {
    const res = await call<Obj>(cnapi, 'dockerCopy', server, vm, { path: '/etc/hostname', mode: 'read' });
    expect(res.containerPathStat).toMatchObject({ name: 'etc/hostname', size: 6, mode: 0 });
    const entries = await tarEntries(await readUntilClose(await connect(res.host, res.port)));
    expect(entries.map((e) => [e.path, e.content])).toEqual([['hostname', 'ctr-1\n']]);

    const err = await callError(cnapi, 'dockerCopy', server, vm, { path: '/no/such', mode: 'read' });
    expect(err.statusCode).toBe(404);
    expect(err.body).toMatchObject({ code: 'FileNotFound', message: 'Could not find requested file' });
    const notDir = await callError(cnapi, 'dockerCopy', server, vm, { path: '/etc/hostname', mode: 'write' });
    expect(notDir.statusCode).toBe(400);
    expect(notDir.body).toMatchObject({ code: 'PathNotDirectory' });
  });

  it('dockerStats: the stats stream of the container (CNAPI no longer sees a 404 it cannot read)', async () => {
    const res = await call<Obj>(cnapi, 'dockerStats', server, vm, { payload: { doStream: false, clientApiVersion: 1.24 } });
    expect(res.host).toBe('127.0.0.1');
    const [rec] = jsonLines(await readUntilClose(await connect(res.host, res.port)));
    expect(rec.memory_stats.limit).toBe(256 * 1024 * 1024);
    expect(rec.cpu_stats.system_cpu_usage).toBe(100);
  });

  it("dockerStats maps a task error starting 'ENOENT,' (CNAPI reads error.orig.error) to 404", async () => {
    const fault = await fetch(`${dc.daemon.controlAddress.url}/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ server, task: 'docker_stats', error: 'ENOENT, no such file or directory' }),
    });
    expect(fault.status).toBeLessThan(300);
    try {
      const err = await callError(cnapi, 'dockerStats', server, vm, { payload: { doStream: false, Resource: '/data', id: 'abc123' } });
      expect(err.statusCode).toBe(404);
      expect(err.body).toMatchObject({ code: 'ResourceNotFound', message: 'Could not find the file /data in container abc123' });
    } finally {
      await fetch(`${dc.daemon.controlAddress.url}/faults?server=${server}`, { method: 'DELETE' });
    }
    const other = await fetch(`${dc.daemon.controlAddress.url}/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ server, task: 'docker_stats', error: 'kstat read failed' }),
    });
    expect(other.status).toBeLessThan(300);
    try {
      const err = await callError(cnapi, 'dockerStats', server, vm, { payload: { doStream: false } });
      expect(err.statusCode).toBe(500);
      expect(err.body?.message).toContain('kstat read failed');
    } finally {
      await fetch(`${dc.daemon.controlAddress.url}/faults?server=${server}`, { method: 'DELETE' });
    }
  });

  it('dockerBuild: a build through the returned listener ends in an image', async () => {
    const res = await call<Obj>(cnapi, 'dockerBuild', server, vm, {
      payload: {
        account_uuid: newUuid(),
        command: 'build',
        imgapi_url: dc.urls.imgapi,
        scratchImageUuid: newUuid(),
        nocache: true,
        dockerfile: 'Dockerfile',
      },
    });
    const created: Obj[] = [];
    const { events } = await runBuildClient(res.host, res.port, makeTar({ Dockerfile: 'FROM scratch\nLABEL role=web\n' }), (e) => {
      if (e.type === 'image_create') created.push(e.payload);
      return {};
    });
    expect(events[events.length - 1]).toMatchObject({ type: 'end' });
    expect(events[events.length - 1].error).toBeUndefined();
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ head: true, image: { config: { Labels: { role: 'web' } } } });
    const finished = events.find((e) => e.type === 'build_finished');
    expect(finished.finalImageDigest).toBe(created[0]!.config_digest);
  });

  // sdc-cn-agent lib/backends/smartos/bin/docker-build.js publishes each file layer to the
  // IMGAPI it is given (import, add file, update to the layer's uuid, activate): the dev
  // IMGAPI takes that sequence, so the layer is an active image there.
  it('dockerBuild with COPY publishes its layer to the dev IMGAPI, active', async () => {
    const res = await call<Obj>(cnapi, 'dockerBuild', server, vm, {
      payload: {
        account_uuid: newUuid(),
        command: 'build',
        imgapi_url: dc.urls.imgapi,
        scratchImageUuid: newUuid(),
        nocache: true,
        dockerfile: 'Dockerfile',
      },
    });
    const created: Obj[] = [];
    const context = makeTar({ Dockerfile: 'FROM scratch\nCOPY hello.txt /srv/\n', 'hello.txt': 'hi there\n' });
    const { events } = await runBuildClient(res.host, res.port, context, (e) => {
      if (e.type === 'image_create') created.push(e.payload);
      return {};
    });
    expect(events[events.length - 1], JSON.stringify(events.slice(-3))).toMatchObject({ type: 'end' });
    expect(events[events.length - 1].error).toBeUndefined();
    const layer = created.find((c) => typeof c.image_uuid === 'string' && c.image_uuid.length > 0)!;
    const image = (await (await fetch(`${dc.urls.imgapi}/images/${layer.image_uuid}`)).json()) as Obj;
    expect(image).toMatchObject({ uuid: layer.image_uuid, state: 'active', type: 'docker' });
    expect(image.files).toHaveLength(1);
  });
});
