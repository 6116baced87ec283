/**
 * The docker tasks a SmartOS CN runs, at cn-agent's task API: each answers `{host, port}` of a
 * listener for that one request, which speaks the stream protocol sdc-docker reads. Followed:
 * sdc-cn-agent lib/backends/smartos/tasks/docker_{exec,copy,stats,build}.js,
 * bin/docker-{exec,copy,stats,build}.js, lib/docker-stdio.js; the consumer side in sdc-docker
 * lib/backends/sdc/containers.js and build.js.
 */
import { promises as fsp } from 'node:fs';
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import {
  connect,
  execStream,
  jsonLines,
  makeTar,
  readUntilClose,
  runBuildClient,
  tarEntries,
} from './docker-client.js';
import { Harness, postTask, provisionParams, type TestCn } from './helpers.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('docker tasks', () => {
  let h: Harness;
  let cn: TestCn;
  let vmUuid: string;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
    const params = provisionParams(cn.uuid, {
      hostname: 'web-7',
      internal_metadata: { 'docker:env': JSON.stringify(['FOO=bar']), 'docker:cmd': JSON.stringify(['echo', 'from', 'init']) },
    });
    const r = await postTask(cn, 'machine_create', params);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    vmUuid = params.uuid as string;
  });
  afterAll(async () => {
    await h?.close();
  });

  const exec = (command: Record<string, unknown>, uuid = vmUuid) => postTask(cn, 'docker_exec', { uuid, command });

  describe('docker_exec (tasks/docker_exec.js, lib/docker-stdio.js)', () => {
    it("answers the CN agent IP and a one-request port, then streams the command's output and exit code", async () => {
      const r = await exec({ Cmd: ['echo', 'hello', 'world'], AttachStdin: false, AttachStdout: true, Tty: false });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.host).toBe('127.0.0.1');
      expect(r.body.port).toBeGreaterThan(0);
      expect(r.body.port).not.toBe(cn.cn.agentAddress!.port);
      const { frames, raw } = await execStream(r.body.host, r.body.port);
      expect(raw.endsWith('\r\n')).toBe(true);
      expect(frames).toEqual([
        { type: 'stdout', data: 'hello world\n' },
        { type: 'end', data: { code: 0, signal: null } },
      ]);
    });

    it('reads files of the container model (cat /etc/hostname) and knows the hostname and env', async () => {
      const r = await exec({ Cmd: ['sh', '-c', 'cat /etc/hostname; hostname; echo $FOO; false || echo fallback'] });
      const { frames } = await execStream(r.body.host, r.body.port);
      const out = frames.filter((f) => f.type === 'stdout').map((f) => f.data).join('');
      expect(out).toBe('web-7\nweb-7\nbar\nfallback\n');
      expect(frames[frames.length - 1]).toEqual({ type: 'end', data: { code: 0, signal: null } });
    });

    it("fails a missing command the way dockerexec does: its FATAL line on stderr and exit code 17", async () => {
      const r = await exec({ Cmd: ['no-such-cmd', '-x'] });
      const { frames } = await execStream(r.body.host, r.body.port);
      expect(frames).toHaveLength(2);
      expect(frames[0].type).toBe('stderr');
      expect(frames[0].data).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z FATAL \(code: 17\): 'no-such-cmd' not found in PATH\r\n$/);
      expect(frames[1]).toEqual({ type: 'end', data: { code: 17, signal: null } });

      const r2 = await exec({ Cmd: ['/opt/bin/nothing'] });
      const s2 = await execStream(r2.body.host, r2.body.port);
      expect(s2.frames[0].data).toMatch(/FATAL \(code: 25\): stat\(\/opt\/bin\/nothing\): No such file or directory/);
      expect(s2.frames[1].data.code).toBe(25);
    });

    it('passes stdin frames to the command and ends it on the client end frame', async () => {
      const r = await exec({ Cmd: ['cat'], AttachStdin: true });
      const { frames } = await execStream(r.body.host, r.body.port, { stdin: ['line one\n', 'line two\n'], endStdin: true });
      expect(frames).toEqual([
        { type: 'stdout', data: 'line one\n' },
        { type: 'stdout', data: 'line two\n' },
        { type: 'end', data: { code: 0, signal: null } },
      ]);
    });

    it('frames a Tty session as tty with CR LF line ends', async () => {
      const r = await exec({ Cmd: ['echo', 'hi'], Tty: true });
      const { frames } = await execStream(r.body.host, r.body.port);
      expect(frames).toEqual([
        { type: 'tty', data: 'hi\r\n' },
        { type: 'end', data: { code: 0, signal: null } },
      ]);
    });

    it('a detached command finishes with {} and opens no listener', async () => {
      const before = h.server.streams.stats().opened;
      const r = await exec({ Cmd: ['sleep', '1'], Detach: true });
      expect(r.status).toBe(200);
      expect(r.body.host).toBeUndefined();
      expect(r.body.port).toBeUndefined();
      expect(h.server.streams.stats().opened).toBe(before);
    });

    it('attach streams the container init command (docker:cmd)', async () => {
      const r = await exec({ AttachConsole: true, Cmd: ['AttachConsole'], AttachStdout: true, Tty: false });
      const { frames } = await execStream(r.body.host, r.body.port);
      expect(frames).toEqual([
        { type: 'stdout', data: 'from init\n' },
        { type: 'end', data: { code: 0, signal: null } },
      ]);
    });

    it('refuses a stopped VM (VmNotRunning) and reports a missing one as vmadm does', async () => {
      const params = provisionParams(cn.uuid);
      await postTask(cn, 'machine_create', params);
      await postTask(cn, 'machine_shutdown', { uuid: params.uuid });
      const r = await exec({ Cmd: ['echo'] }, params.uuid as string);
      expect(r.status).toBe(500);
      expect(r.body).toMatchObject({ error: 'docker_exec: VM is not running, cannot exec', details: { restCode: 'VmNotRunning' } });

      const missing = newUuid();
      const r2 = await exec({ Cmd: ['echo'] }, missing);
      expect(r2.status).toBe(500);
      expect(r2.body.details).toEqual({ restCode: 'VmNotFound' });
      expect(r2.body.error).toContain(missing);
    });
  });

  describe('docker_copy (tasks/docker_copy.js, docker-stdio.js setupDockerFileStream)', () => {
    it('read: answers the containerPathStat and streams gtar cf - -C <dir> <name>', async () => {
      const r = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: 'etc/hostname', mode: 'read' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.host).toBe('127.0.0.1');
      expect(r.body.containerPathStat).toMatchObject({ name: 'etc/hostname', size: 6, linkTarget: '', mode: 0 });
      expect(Number.isNaN(Date.parse(r.body.containerPathStat.mtime))).toBe(false);
      const data = await readUntilClose(await connect(r.body.host, r.body.port));
      const entries = await tarEntries(data);
      expect(entries.map((e) => [e.path, e.type, e.content])).toEqual([['hostname', 'File', 'web-7\n']]);
      expect(entries[0]!.uid).toBe(0);
      expect(data.length % 10240).toBe(0);
    });

    it('a directory: mode 1<<31 and every member under its name', async () => {
      const r = await postTask(cn, 'docker_copy', { uuid: vmUuid, payload: { path: '/etc' } });
      expect(r.body.containerPathStat.mode).toBe(2 ** 31);
      const entries = await tarEntries(await readUntilClose(await connect(r.body.host, r.body.port)));
      expect(entries.map((e) => e.path)).toEqual(['etc/', 'etc/hostname', 'etc/hosts', 'etc/resolv.conf']);
      expect(entries.find((e) => e.path === 'etc/resolv.conf')!.content).toBe('nameserver 8.8.8.8\n');
    });

    it('write: extracts the client tar into the directory; exec and read see it', async () => {
      const r = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/tmp', mode: 'write' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.containerPathStat).toBeUndefined();
      const s = await connect(r.body.host, r.body.port, { allowHalfOpen: true });
      const closed = readUntilClose(s);
      s.end(makeTar({ 'app/config.txt': 'key=value\n' }));
      expect((await closed).length).toBe(0);

      const e = await exec({ Cmd: ['cat', '/tmp/app/config.txt'] });
      const { frames } = await execStream(e.body.host, e.body.port);
      expect(frames[0]).toEqual({ type: 'stdout', data: 'key=value\n' });

      const back = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/tmp/app', mode: 'read' });
      const entries = await tarEntries(await readUntilClose(await connect(back.body.host, back.body.port)));
      expect(entries.map((x) => [x.path, x.content])).toEqual([
        ['app/', ''],
        ['app/config.txt', 'key=value\n'],
      ]);
    });

    it('a reprovisioned container starts from its image again: what was copied in is gone', async () => {
      const params = provisionParams(cn.uuid);
      await postTask(cn, 'machine_create', params);
      const uuid = params.uuid as string;
      const w = await postTask(cn, 'docker_copy', { uuid, path: '/root', mode: 'write' });
      const s = await connect(w.body.host, w.body.port, { allowHalfOpen: true });
      const closed = readUntilClose(s);
      s.end(makeTar({ 'notes.txt': 'keep?\n' }));
      await closed;
      expect((await postTask(cn, 'docker_copy', { uuid, path: '/root/notes.txt', mode: 'stat' })).status).toBe(200);
      const re = await postTask(cn, 'machine_reprovision', { uuid, image_uuid: newUuid() });
      expect(re.status, JSON.stringify(re.body)).toBe(200);
      const after = await postTask(cn, 'docker_copy', { uuid, path: '/root/notes.txt', mode: 'stat' });
      expect(after.body.details).toEqual({ restCode: 'FileNotFound' });
    });

    it('stat: the path stat and no listener', async () => {
      const r = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/etc/hosts', mode: 'stat' });
      expect(r.status).toBe(200);
      expect(r.body.port).toBeUndefined();
      expect(r.body.containerPathStat).toMatchObject({ name: 'etc/hosts', mode: 0 });
    });

    it('refuses missing paths (FileNotFound), files on the way (PathNotDirectory) and bad modes', async () => {
      const missing = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/nope', mode: 'read' });
      expect(missing.status).toBe(500);
      expect(missing.body).toMatchObject({ error: 'no such file in container: /nope', details: { restCode: 'FileNotFound' } });
      const through = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/etc/hostname/x', mode: 'read' });
      expect(through.body).toMatchObject({ error: 'path was not a directory: /etc/hostname/x', details: { restCode: 'PathNotDirectory' } });
      const notDir = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/etc/hostname', mode: 'write' });
      expect(notDir.body.details).toEqual({ restCode: 'PathNotDirectory' });
      const noVm = await postTask(cn, 'docker_copy', { uuid: newUuid(), path: '/etc/hostname' });
      expect(noVm.body.details).toEqual({ restCode: 'FileNotFound' });
      const mode = await postTask(cn, 'docker_copy', { uuid: vmUuid, path: '/etc', mode: 'sideways' });
      expect(mode.status).toBe(500);
      expect(mode.body.error).toBe('unknown mode: sideways');
    });
  });

  describe('docker_stats (bin/docker-stats.js)', () => {
    it('one-shot (doStream false): one record from the VM model, then the connection closes', async () => {
      const r = await postTask(cn, 'docker_stats', { uuid: vmUuid, payload: { doStream: false, clientApiVersion: 1.24 } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.host).toBe('127.0.0.1');
      const records = jsonLines(await readUntilClose(await connect(r.body.host, r.body.port)));
      expect(records).toHaveLength(1);
      const rec = records[0];
      expect(Number.isNaN(Date.parse(rec.read))).toBe(false);
      // max_physical_memory 256 MiB, max_swap 512 MiB in the provision payload.
      expect(rec.memory_stats.limit).toBe(256 * 1024 * 1024);
      expect(rec.memory_stats.stats.total_swap).toBe(512 * 1024 * 1024);
      expect(rec.memory_stats.usage).toBeGreaterThan(0);
      expect(rec.memory_stats.usage).toBeLessThanOrEqual(rec.memory_stats.limit);
      expect(rec.memory_stats.stats.inactive_anon).toBe(rec.memory_stats.stats.total_swap - rec.memory_stats.stats.swap);
      // cpu_cap 100: the cpucaps kstat's percentage, and 100 per record of system time.
      expect(rec.cpu_stats.system_cpu_usage).toBe(100);
      expect(rec.cpu_stats.cpu_usage.percpu_usage).toEqual([rec.cpu_stats.cpu_usage.total_usage]);
      expect(rec.precpu_stats.system_cpu_usage).toBe(0);
      expect(Object.keys(rec.networks)).toEqual(['net0']);
      expect(rec.blkio_stats.io_service_bytes_recursive).toEqual([]);
    });

    it('streams a record every second, each precpu_stats the previous cpu_stats, until the client ends', async () => {
      const r = await postTask(cn, 'docker_stats', { uuid: vmUuid, payload: { doStream: true, clientApiVersion: 1.19 } });
      const s = await connect(r.body.host, r.body.port);
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      const closed = new Promise((resolve) => s.once('close', resolve));
      for (let i = 0; i < 40 && jsonLinesSafe(Buffer.concat(chunks)).length < 2; i++) await pause(100);
      s.end();
      await closed;
      const recs = jsonLinesSafe(Buffer.concat(chunks));
      expect(recs.length).toBeGreaterThanOrEqual(2);
      expect(Date.parse(recs[1].read) - Date.parse(recs[0].read)).toBeGreaterThanOrEqual(900);
      expect(recs[1].precpu_stats).toEqual(recs[0].cpu_stats);
      expect(recs[1].cpu_stats.system_cpu_usage).toBe(200);
      // An API 1.19 client gets the single `network` sum.
      expect(recs[0].network.rx_bytes).toBeGreaterThanOrEqual(0);
      expect(recs[0].networks).toBeUndefined();
      await waitForSize(h, 0);
    });

    it('a VM that is not there has no zone figures, as kstats have none for it', async () => {
      const r = await postTask(cn, 'docker_stats', { uuid: newUuid(), payload: { doStream: false } });
      expect(r.status).toBe(200);
      const [rec] = jsonLines(await readUntilClose(await connect(r.body.host, r.body.port)));
      expect(Object.keys(rec).sort()).toEqual(['blkio_stats', 'read']);
    });
  });

  describe('docker_build (bin/docker-build.js, sdc-docker-build lib/build.js)', () => {
    const SCRATCH = '5a2fa7b1-bd28-4ff7-a3b7-56ffa1ac37c2';
    const payload = (extra: Record<string, unknown> = {}) => ({
      account_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
      command: 'build',
      imgapi_url: imgapi.url,
      scratchImageUuid: SCRATCH,
      nocache: true,
      ...extra,
    });
    const imgapi = new RecordingImgapi();
    beforeAll(async () => {
      await imgapi.start();
    });
    afterAll(async () => {
      await imgapi.stop();
    });

    it('builds FROM scratch with metadata steps: the step stream, image_create per layer, build_finished, end', async () => {
      const r = await postTask(cn, 'docker_build', { uuid: vmUuid, payload: payload({ labels: '{"com.joyent.package":"x","team":"a"}' }) });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const context = makeTar({ Dockerfile: 'FROM scratch\nENV APP=/srv\nLABEL version="1.0"\nCMD ["/bin/true"]\n' });
      const creates: any[] = [];
      const { contextReply, events } = await runBuildClient(r.body.host, r.body.port, context, (e) => {
        if (e.type === 'image_create') creates.push(e.payload);
        return { result: e.type === 'image_create' ? { ok: true } : undefined };
      });
      expect(contextReply).toEqual([{ message: 'Context received', type: 'message', messageId: 0 }]);
      const stdout = events.filter((e) => e.type === 'stdout').map((e) => e.message);
      expect(stdout[0]).toBe('Step 1/4 : FROM scratch\n');
      expect(stdout[1]).toBe(' --->\n');
      expect(stdout).toContain('Step 2/4 : ENV APP=/srv\n');
      expect(stdout).toContain('Step 4/4 : CMD /bin/true\n');
      expect(stdout[stdout.length - 1]).toMatch(/^ ---> [0-9a-f]{12}\n$/);
      expect(events[0]).toMatchObject({ type: 'message', message: 'Starting build' });
      // Every event carries the next messageId.
      expect(events.map((e) => e.messageId)).toEqual(events.map((_e, i) => i + 1));

      expect(creates).toHaveLength(3);
      const last = creates[2];
      expect(last.head).toBe(true);
      expect(creates[0].head).toBe(false);
      expect(last.image_uuid).toBe(SCRATCH);
      expect(last.image.config).toMatchObject({ Cmd: ['/bin/true'], Env: ['APP=/srv'], Labels: { version: '1.0', team: 'a' } });
      const manifest = JSON.parse(last.manifest_str);
      expect(manifest).toMatchObject({ schemaVersion: 2, config: { digest: last.config_digest }, layers: [] });
      expect(last.manifest_digest).toBe(`sha256:${crypto.createHash('sha256').update(last.manifest_str).digest('hex')}`);
      expect(last.image.history).toHaveLength(3);
      expect(last.image.history.every((x: any) => x.empty_layer === true)).toBe(true);
      expect(last.image.rootfs).toEqual({ type: 'layers', diff_ids: [] });

      const finished = events.find((e) => e.type === 'build_finished');
      expect(finished.finalImageDigest).toBe(last.config_digest);
      expect(events[events.length - 1]).toEqual({ type: 'end', messageId: events.length });
      expect(imgapi.calls).toEqual([]);
    });

    it('COPY publishes the layer to IMGAPI (import, file, update, activate) and writes into the container', async () => {
      const r = await postTask(cn, 'docker_build', { uuid: vmUuid, payload: payload() });
      const context = makeTar({ Dockerfile: 'FROM scratch\nCOPY hello.txt /srv/\n', 'hello.txt': 'hi there\n' });
      const creates: any[] = [];
      const { events } = await runBuildClient(r.body.host, r.body.port, context, (e) => {
        if (e.type === 'image_create') creates.push(e.payload);
        return {};
      });
      const end = events[events.length - 1];
      expect(end, JSON.stringify(events)).toEqual({ type: 'end', messageId: events.length });
      expect(imgapi.calls.map((c) => `${c.method} ${c.path.replace(/[0-9a-f-]{36}/, 'U').replace(/\?.*sha1=[0-9a-f]+.*/, '?file')}`)).toEqual([
        'POST /images/U?action=import',
        'PUT /images/U/file?file',
        'POST /images/U?action=update',
        'POST /images/U?action=activate',
      ]);
      const tar = gunzipSync(imgapi.files[0]!);
      const layer = await tarEntries(tar);
      expect(layer.map((e) => [e.path, e.content])).toEqual([['srv/hello.txt', 'hi there\n']]);
      const [created] = creates;
      expect(created.image.rootfs.diff_ids).toEqual([`sha256:${crypto.createHash('sha256').update(tar).digest('hex')}`]);
      const activated = imgapi.calls[3]!.path.split('/')[2]!.split('?')[0];
      expect(created.image_uuid).toBe(activated);
      expect(imgapi.calls[2]!.body.uuid).toBe(activated);

      const e = await exec({ Cmd: ['cat', '/srv/hello.txt'] });
      expect((await execStream(e.body.host, e.body.port)).frames[0]).toEqual({ type: 'stdout', data: 'hi there\n' });
    });

    it('asks sdc-docker for cached images and FROM images, and ends with the error of a failed step', async () => {
      const r = await postTask(cn, 'docker_build', { uuid: vmUuid, payload: payload({ nocache: false }) });
      const context = makeTar({ Dockerfile: 'FROM busybox:latest\nUSER nobody\n' });
      const asked: any[] = [];
      const { events } = await runBuildClient(r.body.host, r.body.port, context, (e) => {
        asked.push(e);
        if (e.type === 'image_reprovision') return { error: 'image busybox:latest not found' };
        return {};
      });
      expect(asked).toEqual([{ cmdName: 'FROM', imageName: 'busybox:latest', type: 'image_reprovision', messageId: 3 }]);
      expect(events[events.length - 1]).toEqual({ type: 'end', error: 'image busybox:latest not found', messageId: events.length });
    });

    it('keeps the build payload out of the task log (log_params false)', async () => {
      const secret = `secret-${newUuid()}`;
      const r = await postTask(cn, 'docker_build', { uuid: vmUuid, payload: payload({ buildargs: JSON.stringify({ TOKEN: secret }) }) });
      expect(r.status).toBe(200);
      await postTask(cn, 'docker_stats', { uuid: vmUuid, payload: { doStream: false, marker: secret } });
      const log = await waitForLog(h, secret);
      const lines = log.split('\n').filter((l) => l.includes('docker_build'));
      expect(lines.some((l) => l.includes('Not logging task params for docker_build (log_params=false)'))).toBe(true);
      expect(lines.filter((l) => l.includes(secret))).toEqual([]);
    });
  });

  describe('listener lifecycle', () => {
    it('a listener nobody connects to closes after its timeout', async () => {
      const h2 = await Harness.create({ streamTimeoutMs: 300 });
      try {
        const cn2 = await h2.addCn();
        const r = await postTask(cn2, 'docker_stats', { uuid: newUuid(), payload: { doStream: true } });
        expect(r.status).toBe(200);
        expect(h2.server.streams.size).toBe(1);
        await waitForSize(h2, 0);
        expect(h2.server.streams.stats().timedOut).toBe(1);
        await expect(connect(r.body.host, r.body.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      } finally {
        await h2.close();
      }
    });

    it('a build whose stream client never comes after the context closes after the timeout', async () => {
      const h2 = await Harness.create({ streamTimeoutMs: 400 });
      try {
        const cn2 = await h2.addCn();
        const r = await postTask(cn2, 'docker_build', {
          uuid: newUuid(),
          payload: { account_uuid: newUuid(), command: 'build', imgapi_url: 'http://127.0.0.1:1', scratchImageUuid: newUuid() },
        });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        // A context upload that takes longer than the timeout is not cut short.
        const cs = await connect(r.body.host, r.body.port, { allowHalfOpen: true });
        const replied = readUntilClose(cs);
        cs.write(makeTar({ Dockerfile: 'FROM scratch\n' }).subarray(0, 512));
        await pause(600);
        cs.end(makeTar({ Dockerfile: 'FROM scratch\n' }).subarray(512));
        expect(jsonLines(await replied, '\n')).toEqual([{ message: 'Context received', type: 'message', messageId: 0 }]);
        expect(h2.server.streams.size).toBe(1);
        await waitForSize(h2, 0);
        expect(h2.server.streams.stats().timedOut).toBe(1);
      } finally {
        await h2.close();
      }
    });

    it('stopping the server closes open listeners and connected streams', async () => {
      const h3 = await Harness.create();
      const cn3 = await h3.addCn();
      const idle = await postTask(cn3, 'docker_exec', { uuid: newUuid(), command: { Cmd: ['Logs'], Logs: true } });
      const streaming = await postTask(cn3, 'docker_stats', { uuid: newUuid(), payload: { doStream: true } });
      const s = await connect(streaming.body.host, streaming.body.port);
      const closed = readUntilClose(s);
      expect(h3.server.streams.size).toBe(2);
      await h3.close();
      await closed;
      expect(h3.server.streams.size).toBe(0);
      await expect(connect(idle.body.host, idle.body.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    });

    it("detaching a CN closes its listeners and connected streams, and no other CN's", async () => {
      const h4 = await Harness.create();
      try {
        const [gone, kept] = [await h4.addCn(), await h4.addCn()];
        const goneIdle = await postTask(gone, 'docker_exec', { uuid: newUuid(), command: { Cmd: ['Logs'], Logs: true } });
        const goneStats = await postTask(gone, 'docker_stats', { uuid: newUuid(), payload: { doStream: true } });
        const keptIdle = await postTask(kept, 'docker_exec', { uuid: newUuid(), command: { Cmd: ['Logs'], Logs: true } });
        const s = await connect(goneStats.body.host, goneStats.body.port);
        const closed = readUntilClose(s);
        expect(h4.server.streams.size).toBe(3);
        await h4.server.detach(gone.uuid);
        await closed;
        await expect(connect(goneIdle.body.host, goneIdle.body.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
        expect(h4.server.streams.size).toBe(1);
        (await connect(keptIdle.body.host, keptIdle.body.port)).destroy();
      } finally {
        await h4.close();
      }
    });
  });
});

function jsonLinesSafe(data: Buffer): any[] {
  const text = data.toString();
  const cut = text.lastIndexOf('\r\n');
  return cut < 0 ? [] : jsonLines(text.slice(0, cut + 2));
}

async function waitForSize(h: Harness, n: number): Promise<void> {
  for (let i = 0; i < 100 && h.server.streams.size !== n; i++) await pause(50);
  expect(h.server.streams.size).toBe(n);
}

async function waitForLog(h: Harness, marker: string): Promise<string> {
  const file = path.join(h.dataDir, 'logs', 'cn-agent-tasks.log');
  for (let i = 0; i < 100; i++) {
    const text = await fsp.readFile(file, 'utf8').catch(() => '');
    if (text.includes(marker)) return text;
    await pause(50);
  }
  throw new Error('the task log never showed the marker');
}

/** IMGAPI as docker-build.js calls it (sdc-clients IMGAPI), recording each call. */
class RecordingImgapi {
  readonly calls: { method: string; path: string; body: any }[] = [];
  readonly files: Buffer[] = [];
  private server: http.Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const data = Buffer.concat(chunks);
        const isFile = req.method === 'PUT';
        const body = isFile ? undefined : data.length ? JSON.parse(data.toString()) : undefined;
        this.calls.push({ method: req.method!, path: req.url!, body });
        const uuid = req.url!.split('/')[2]!.split('?')[0];
        let answer: unknown = { uuid, state: 'unactivated' };
        if (isFile) {
          this.files.push(data);
          answer = { uuid, files: [{ sha1: crypto.createHash('sha1').update(data).digest('hex'), size: data.length, compression: 'gzip' }] };
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
