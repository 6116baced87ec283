/**
 * The server, agent, image and zfs tasks over HTTP: server_sysinfo, server_reboot,
 * server_update_nics, recovery_config, command_execute, server_overprovision_ratio,
 * agent_install (against a fake IMGAPI serving a real agent tarball), agents_uninstall,
 * refresh_agents, image_ensure_present, image_get and the zfs_* queries.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { create as tarCreate } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_EXECUTE_EXIT_CODE } from '../../src/agents/cn-agent/index.js';
import { repeatableUuidFromHex } from '../../src/common/uuid.js';
import { nicenum } from '../../src/agents/cn-agent/zfs/model.js';
import { BUILTIN_AGENTS, readAgents } from '../../src/mockcn/agents-dir.js';
import { newUuid } from '../../src/common/uuid.js';
import net from 'node:net';
import { Harness, history, postTask, provisionParams, type TestCn } from './helpers.js';

/** 'open', or the error code of a TCP connect (ECONNREFUSED when nothing listens). */
function connectResult(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(port, host);
    sock.once('connect', () => {
      sock.destroy();
      resolve('open');
    });
    sock.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

async function waitUntil(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A minimal IMGAPI: GET /images/:uuid and /images/:uuid/file from an in-memory catalogue. */
class FakeImgapi {
  readonly images = new Map<string, { manifest: Record<string, unknown>; file?: Buffer }>();
  readonly requests: string[] = [];
  private server = http.createServer((req, res) => {
    this.requests.push(`${req.method} ${req.url}`);
    const m = /^\/images\/([0-9a-f-]{36})(\/file)?$/.exec(req.url ?? '');
    const img = m ? this.images.get(m[1]!) : undefined;
    if (!m || !img || (m[2] && !img.file)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'ResourceNotFound', message: 'image not found' }));
      return;
    }
    if (m[2]) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': img.file!.length });
      res.end(img.file);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(img.manifest));
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A gzip agent tarball `<dir>/{package.json,image_uuid,bin/agent.js}` as agentsshar builds them. */
async function agentTarball(work: string, name: string, version: string, imageUuid: string, dirName = name): Promise<Buffer> {
  const root = await fsp.mkdtemp(path.join(work, 'agent-'));
  await fsp.mkdir(path.join(root, dirName, 'bin'), { recursive: true });
  await fsp.writeFile(path.join(root, dirName, 'package.json'), JSON.stringify({ name, version }, null, 2));
  await fsp.writeFile(path.join(root, dirName, 'image_uuid'), `${imageUuid}\n`);
  await fsp.writeFile(path.join(root, dirName, 'bin', 'agent.js'), '// an agent\n');
  const file = path.join(root, 'agent.tgz');
  await tarCreate({ gzip: true, file, cwd: root }, [dirName]);
  return fsp.readFile(file);
}

function sha1(b: Buffer): string {
  return createHash('sha1').update(b).digest('hex');
}

describe('server tasks', () => {
  let h: Harness;
  let cn: TestCn;
  let imgapi: FakeImgapi;

  beforeAll(async () => {
    imgapi = new FakeImgapi();
    await imgapi.start();
    h = await Harness.create({ imgapiUrl: imgapi.url });
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
    await imgapi.stop();
  });

  describe('server_sysinfo', () => {
    it('answers {sysinfo} from sysinfo.json with the agent address', async () => {
      const r = await postTask(cn, 'server_sysinfo', {});
      expect(r.status).toBe(200);
      const onDisk = JSON.parse(await fsp.readFile(cn.cn.paths.sysinfo, 'utf8'));
      const url = new URL(cn.url);
      expect(r.body.sysinfo).toEqual({ ...onDisk, 'CN Agent IP': url.hostname, 'CN Agent Port': Number(url.port) });
    });

    it('reports an unreadable sysinfo.json as a string error', async () => {
      const c = await h.addCn();
      await fsp.writeFile(c.cn.paths.sysinfo, '{ not json');
      const r = await postTask(c, 'server_sysinfo', {});
      expect(r.status).toBe(500);
      expect(typeof r.body.error).toBe('string');
      expect(r.body.error).toMatch(/not valid JSON/);
    });
  });

  describe('server_reboot', () => {
    // sdc-cn-agent lib/backends/smartos/tasks/server_reboot.js answers `{}` as soon as it has
    // spawned bin/reboot-server.js (`shutdown -y -g 0 -i 6`): the CN then goes down, its
    // zones halt, and it boots with a new Boot Time; zones with autoboot come back.
    let rh: Harness;
    beforeAll(async () => {
      rh = await Harness.create({ bootSeconds: 0.6 });
    });
    afterAll(async () => {
      await rh.close();
    });

    it('answers at once, goes down (connections refused, VMs halted), then boots with a new Boot Time and its autoboot VMs', async () => {
      const c = await rh.addCn();
      const owner = '930896af-bf8c-48d4-885c-6573a94b1853';
      const a = await c.cn.vms.create({ brand: 'joyent-minimal', alias: 'a', owner_uuid: owner, max_physical_memory: 128 });
      const b = await c.cn.vms.create({ brand: 'joyent-minimal', alias: 'b', owner_uuid: owner, max_physical_memory: 128 });
      await c.cn.vms.update(b.uuid, { autoboot: false });
      const off = await c.cn.vms.create({ brand: 'joyent-minimal', alias: 'off', owner_uuid: owner, autoboot: false, max_physical_memory: 128 });
      expect([a.state, c.cn.vms.get(b.uuid)!.state, off.state]).toEqual(['running', 'running', 'stopped']);
      const before = JSON.parse(await fsp.readFile(c.cn.paths.sysinfo, 'utf8'));
      await postTask(c, 'nop', {});

      const r = await postTask(c, 'server_reboot', {});
      expect(r.status).toBe(200);
      expect(r.body).toEqual({});

      // Down: cn-agent does not listen, the running zones halted with their autoboot kept.
      const url = new URL(c.url);
      await waitUntil(async () => (await connectResult(url.hostname, Number(url.port))) === 'ECONNREFUSED', 'connections refused');
      expect(c.cn.power).toBe('down');
      expect(c.hooks.powerChanges[0]).toEqual({ power: 'down', graceful: true });
      expect(c.cn.vms.get(a.uuid)).toMatchObject({ state: 'stopped', autoboot: true, exit_status: 0 });
      expect(c.cn.vms.get(b.uuid)).toMatchObject({ state: 'stopped', autoboot: false });
      expect(c.cn.sysinfo['Boot Time']).toBe(before['Boot Time']);

      // Up again after the boot time: new Boot Time (registered again), autoboot VMs running.
      await waitUntil(async () => (await connectResult(url.hostname, Number(url.port))) === 'open', 'listening again');
      await waitUntil(() => c.cn.vms.get(a.uuid)?.state === 'running', 'autoboot VM running');
      const after = JSON.parse(await fsp.readFile(c.cn.paths.sysinfo, 'utf8'));
      expect(typeof after['Boot Time']).toBe('string');
      expect(Number(after['Boot Time'])).toBeGreaterThan(Number(before['Boot Time']));
      expect({ ...after, 'Boot Time': 'x' }).toEqual({ ...before, 'Boot Time': 'x' });
      expect(c.cn.sysinfo['Boot Time']).toBe(after['Boot Time']);
      expect(c.hooks.sysinfoChangedCount).toBe(1);
      expect(c.hooks.powerChanges.map((p) => p.power)).toEqual(['down', 'up']);
      expect(c.cn.vms.get(b.uuid)!.state).toBe('stopped');
      expect(c.cn.vms.get(off.uuid)!.state).toBe('stopped');
      // The agent restarted: its in-memory task history is gone; it takes tasks again.
      expect(await history(c)).toEqual([]);
      expect((await postTask(c, 'nop', {})).status).toBe(200);
      await waitUntil(() => fsp.access(path.join(c.cn.paths.dir, 'rebooting.json')).then(() => false, () => true), 'reboot marker removed');
    });

    it('cuts the connections of tasks still running when the CN goes down', async () => {
      const c = await rh.addCn();
      const running = postTask(c, 'nop', { sleep: 30 }).then(
        (res) => `answered ${res.status}`,
        (err: Error) => `failed: ${String((err.cause as { code?: string } | undefined)?.code ?? err.message)}`,
      );
      await waitUntil(async () => (await history(c)).some((e) => e.task === 'nop' && e.status === 'active'), 'nop running');
      expect((await postTask(c, 'server_reboot', {})).status).toBe(200);
      expect(await running).toMatch(/^failed/);
      await waitUntil(() => c.cn.power === 'up' && c.cn.registered, 'up again');
      expect((await postTask(c, 'nop', {})).status).toBe(200);
    });
  });

  describe('server_update_nics', () => {
    it('rewrites NIC Names of the interface with that MAC and re-registers, finishing with {} like the real task', async () => {
      const c = await h.addCn();
      const dnet1Mac = c.cn.sysinfo['Network Interfaces'].dnet1!['MAC Address'];
      const r = await postTask(c, 'server_update_nics', {
        nics: [{ mac: dnet1Mac.toUpperCase(), nic_tags_provided: ['external'], belongs_to_type: 'server' }],
      });
      expect(r.status).toBe(200);
      // The real task finishes with nothing; CNAPI's workflow refreshes the sysinfo itself.
      expect(r.body).toEqual({});
      const onDisk = JSON.parse(await fsp.readFile(c.cn.paths.sysinfo, 'utf8'));
      expect(onDisk['Network Interfaces'].dnet1['NIC Names']).toEqual(['external']);
      expect(onDisk['Network Interfaces'].dnet0['NIC Names']).toEqual(['admin']);
      expect(c.cn.sysinfo['Network Interfaces'].dnet1!['NIC Names']).toEqual(['external']);
      expect(c.hooks.sysinfoChangedCount).toBe(1);
      // Nothing changes: no rewrite, no re-registration.
      const again = await postTask(c, 'server_update_nics', { nics: [{ mac: dnet1Mac, nic_tags_provided: ['external'] }] });
      expect(again.status).toBe(200);
      expect(c.hooks.sysinfoChangedCount).toBe(1);
    });

    it('fails on malformed nics and tag names that are not NIC tags', async () => {
      expect((await postTask(cn, 'server_update_nics', {})).status).toBe(500);
      expect((await postTask(cn, 'server_update_nics', { nics: [{ mac: 'zz' }] })).status).toBe(500);
      const r = await postTask(cn, 'server_update_nics', {
        nics: [{ mac: '00:10:fe:00:00:01', nic_tags_provided: ['../x'] }],
      });
      expect(r.status).toBe(500);
    });
  });

  describe('recovery_config', () => {
    const params = { action: 'stage', pivtoken: 'ABCDEF0123456789', recovery_uuid: newUuid(), template: 'tmpl', token: 'tok' };

    it('fails on a server without an encrypted zpool, with the real message', async () => {
      const r = await postTask(cn, 'recovery_config', params);
      expect(r.status).toBe(500);
      expect(r.body.error).toBe(
        'Recovery Configuration error: Recovery configuration can be staged or activated only on servers with encrypted zpools',
      );
    });

    it('checks its params as the real task does', async () => {
      const missing = await postTask(cn, 'recovery_config', { action: 'stage' });
      expect(missing.body.error).toBe('Recovery Configuration error: Missing required request parameters');
      const badAction = await postTask(cn, 'recovery_config', { ...params, action: 'explode' });
      expect(badAction.body.error).toBe('Recovery Configuration error: Invalid value for action parameter');
      const noTemplate = await postTask(cn, 'recovery_config', { ...params, template: undefined });
      expect(noTemplate.body.error).toBe('Recovery Configuration error: Missing template request parameter');
      expect((await postTask(cn, 'recovery_config', { ...params, pivtoken: '../../x' })).status).toBe(500);
      expect((await postTask(cn, 'recovery_config', { ...params, action: 7 })).status).toBe(500);
    });

    it('stages and activates on a server with Zpool Encrypted', async () => {
      const c = await h.addCn({ sysinfo: { 'Zpool Encrypted': true } });
      const staged = await postTask(c, 'recovery_config', params);
      expect(staged.status, JSON.stringify(staged.body)).toBe(200);
      const stagedHex = createHash('sha512').update('tmpl').digest('hex');
      let onDisk = JSON.parse(await fsp.readFile(c.cn.paths.sysinfo, 'utf8'));
      expect(onDisk['Zpool Recovery']).toEqual({ staged: stagedHex });
      const wrong = await postTask(c, 'recovery_config', { ...params, action: 'activate' });
      expect(wrong.body.error).toBe('Recovery Configuration error: Only the staged recovery configuration can be activated');
      const act = await postTask(c, 'recovery_config', { ...params, action: 'activate', recovery_uuid: repeatableUuidFromHex(stagedHex) });
      expect(act.status).toBe(200);
      onDisk = JSON.parse(await fsp.readFile(c.cn.paths.sysinfo, 'utf8'));
      expect(onDisk['Zpool Recovery']).toEqual({ active: stagedHex });
      expect(c.cn.sysinfo['Zpool Recovery']).toEqual({ active: stagedHex });
    });
  });

  describe('command_execute', () => {
    it('answers 200 with a failed execution that says it is not supported', async () => {
      const r = await postTask(cn, 'command_execute', { script: '#!/bin/bash\necho hi', args: [], env: {} });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ exitCode: COMMAND_EXECUTE_EXIT_CODE, signal: null, stdout: '' });
      expect(r.body.exitCode).not.toBe(0);
      expect(r.body.stderr).toMatch(/not supported on a mock CN/);
    });

    it('refuses params of the wrong types', async () => {
      expect((await postTask(cn, 'command_execute', {})).status).toBe(500);
      expect((await postTask(cn, 'command_execute', { script: 'x', args: 'a' })).status).toBe(500);
      expect((await postTask(cn, 'command_execute', { script: 'x', timeout: '5' })).status).toBe(500);
    });
  });

  it('server_overprovision_ratio accepts a value and fails without one', async () => {
    expect((await postTask(cn, 'server_overprovision_ratio', { value: 'ram=1.5' })).status).toBe(200);
    const r = await postTask(cn, 'server_overprovision_ratio', {});
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('no value given');
  });

  describe('agents', () => {
    it('agent_install downloads, verifies and installs the agent, keeping its instance uuid, then posts agents', async () => {
      const c = await h.addCn();
      const image = newUuid();
      const file = await agentTarball(h.dataDir, 'vm-agent', '9.9.9', image);
      imgapi.images.set(image, {
        manifest: { uuid: image, name: 'vm-agent', version: '9.9.9', files: [{ size: file.length, sha1: sha1(file), compression: 'gzip' }] },
        file,
      });
      // A new CN's agents are implicit (no files yet): its instance uuid is what it reported.
      const instanceBefore = (await readAgents(c.cn.paths.agents, c.cn.uuid)).find((a) => a.name === 'vm-agent')!.uuid;
      const r = await postTask(c, 'agent_install', { image_uuid: image, package_name: 'vm-agent' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const agents = await readAgents(c.cn.paths.agents, c.cn.uuid);
      expect(agents.find((a) => a.name === 'vm-agent')).toEqual({ name: 'vm-agent', version: '9.9.9', image_uuid: image, uuid: instanceBefore });
      expect(c.hooks.agentPosts.at(-1)?.find((a) => a.name === 'vm-agent')?.version).toBe('9.9.9');
      // The download is not left behind.
      expect((await fsp.readdir(path.join(h.dataDir, 'tmp'))).filter((f) => f.startsWith('mockcloud-agent-'))).toEqual([]);
    });

    it('agent_install installs a new agent with a fresh instance uuid; CNAPI failing only logs', async () => {
      const c = await h.addCn();
      c.hooks.failAgents = new Error('CNAPI is down');
      const image = newUuid();
      const file = await agentTarball(h.dataDir, 'amon-agent', '1.0.0', image);
      imgapi.images.set(image, { manifest: { uuid: image, name: 'amon-agent', files: [{ size: file.length, sha1: sha1(file) }] }, file });
      const r = await postTask(c, 'agent_install', { image_uuid: image });
      expect(r.status).toBe(200);
      const rec = (await readAgents(c.cn.paths.agents, c.cn.uuid)).find((a) => a.name === 'amon-agent');
      expect(rec).toMatchObject({ version: '1.0.0', image_uuid: image, uuid: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    });

    it('agent_install fails with the real messages on a missing image, a wrong size or sha1, or a non-agent tarball', async () => {
      const c = await h.addCn();
      const missing = newUuid();
      const nf = await postTask(c, 'agent_install', { image_uuid: missing });
      expect(nf.status).toBe(500);
      expect(nf.body.error).toBe(`AgentInstall error: Image not found at ${imgapi.url}/images/${missing}`);

      const image = newUuid();
      const file = await agentTarball(h.dataDir, 'net-agent', '3.0.0', image);
      imgapi.images.set(image, { manifest: { uuid: image, name: 'net-agent', files: [{ size: file.length + 1, sha1: sha1(file) }] }, file });
      const size = await postTask(c, 'agent_install', { image_uuid: image });
      expect(size.body.error).toBe(`AgentInstall error: Unexpected file size (${file.length + 1} vs ${file.length})`);

      imgapi.images.set(image, { manifest: { uuid: image, name: 'net-agent', files: [{ size: file.length, sha1: 'f'.repeat(40) }] }, file });
      const sum = await postTask(c, 'agent_install', { image_uuid: image });
      expect(sum.body.error).toBe(`AgentInstall error: sha1 does not match: (${sha1(file)} vs ${'f'.repeat(40)})`);

      const other = await agentTarball(h.dataDir, 'net-agent', '3.0.0', image, 'something-else');
      imgapi.images.set(image, { manifest: { uuid: image, name: 'net-agent', files: [{ size: other.length, sha1: sha1(other) }] }, file: other });
      const notAgent = await postTask(c, 'agent_install', { image_uuid: image });
      expect(notAgent.body.error).toMatch(/^AgentInstall error: Could not find net-agent\/image_uuid in /);

      // None of these installed anything.
      const agents = await readAgents(c.cn.paths.agents, c.cn.uuid);
      expect(agents.find((a) => a.name === 'net-agent')?.version).toBe('2.3.4');
      expect(c.hooks.agentPosts).toEqual([]);
    });

    it('agent_install refuses a package.json name that would escape agents/', async () => {
      const c = await h.addCn();
      const image = newUuid();
      const file = await agentTarball(h.dataDir, '../../evil', '1.0.0', image, 'evil');
      imgapi.images.set(image, { manifest: { uuid: image, name: 'evil', files: [{ size: file.length, sha1: sha1(file) }] }, file });
      const r = await postTask(c, 'agent_install', { image_uuid: image });
      expect(r.status).toBe(500);
      expect(r.body.error).toMatch(/not a valid agent name/);
      await expect(fsp.stat(path.join(c.cn.paths.dir, 'evil'))).rejects.toThrow();
      await expect(fsp.stat(path.join(h.dataDir, 'servers', 'evil'))).rejects.toThrow();
    });

    it('agents_uninstall removes agents (idempotently) and posts the list; a CNAPI refusal is logged, as the real shared.js does', async () => {
      const c = await h.addCn();
      const r = await postTask(c, 'agents_uninstall', { agents: ['cmon-agent', 'no-such-agent'] });
      expect(r.status).toBe(200);
      const rest = BUILTIN_AGENTS.map((a) => a.name).filter((n) => n !== 'cmon-agent').sort();
      expect((await readAgents(c.cn.paths.agents, c.cn.uuid)).map((a) => a.name)).toEqual(rest);
      expect(c.hooks.agentPosts.at(-1)?.map((a) => a.name)).toEqual(rest);
      // sysinfo's "SDC Agents" follows, and CNAPI gets it again (sdc-cn-agent lib/apm.js
      // uninstallPackages ends with updateSysinfo).
      expect((c.cn.sysinfo['SDC Agents'] as { name: string }[]).map((a) => a.name)).toEqual(rest);
      expect(c.hooks.sysinfoChangedCount).toBe(1);
      c.hooks.failAgents = new Error('CNAPI said no');
      const f = await postTask(c, 'agents_uninstall', { agents: ['net-agent'] });
      expect(f.status).toBe(200);
      expect(f.body).toEqual({});
      const logged = (await history(c)).at(-1).log.find((l: any) => l.message.includes('posting agents to cnapi'));
      expect(logged).toMatchObject({ level: 'warn', message: [{ error: 'CNAPI said no' }, 'posting agents to cnapi'] });
      expect((await readAgents(c.cn.paths.agents, c.cn.uuid)).map((a) => a.name)).not.toContain('net-agent');
    });

    it('agents_uninstall refuses names that are paths', async () => {
      const c = await h.addCn();
      for (const agents of [['../vms'], ['..'], ['a/b'], ['.'], 'cn-agent', [1]]) {
        const r = await postTask(c, 'agents_uninstall', { agents });
        expect(r.status).toBe(500);
      }
      expect((await readAgents(c.cn.paths.agents, c.cn.uuid)).length).toBe(BUILTIN_AGENTS.length);
      await expect(fsp.stat(c.cn.paths.vms)).resolves.toBeDefined();
    });

    it('refresh_agents posts the agents list; a CNAPI refusal is logged, the task finishes (shared.js)', async () => {
      const c = await h.addCn();
      expect((await postTask(c, 'refresh_agents', {})).status).toBe(200);
      expect(c.hooks.agentPosts).toHaveLength(1);
      expect(c.hooks.agentPosts[0]!.find((a) => a.name === 'cn-agent')?.version).toBe('2.15.0');
      c.hooks.failAgents = new Error('CNAPI 500');
      const r = await postTask(c, 'refresh_agents', {});
      expect(r.status).toBe(200);
      const logged = (await history(c)).at(-1).log.find((l: any) => l.message.includes('posting agents to cnapi'));
      expect(logged).toMatchObject({ level: 'warn', message: [{ error: 'CNAPI 500' }, 'posting agents to cnapi'] });
    });
  });

  describe('images', () => {
    it('image_ensure_present imports an image IMGAPI has, then image_get answers its manifest', async () => {
      const c = await h.addCn();
      const image = newUuid();
      imgapi.images.set(image, { manifest: { v: 2, uuid: image, name: 'base-64', version: '1.0', state: 'active', os: 'smartos' } });
      // sdc-cn-agent lib/backends/smartos/imgadm.js getImage: the failed command and its stderr.
      const missing = await postTask(c, 'image_get', { uuid: image });
      expect(missing.status).toBe(500);
      expect(missing.body).toEqual({
        error:
          `Image.get error: error getting image ${image}:\n` +
          `    cmd: /usr/sbin/imgadm get ${image}\n` +
          `    stderr: imgadm get: error (ImageNotInstalled): image "${image}" was not found on zpool "zones"\n`,
      });
      const r = await postTask(c, 'image_ensure_present', { image_uuid: image });
      expect(r.status).toBe(200);
      const g = await postTask(c, 'image_get', { uuid: image });
      expect(g.status).toBe(200);
      expect(g.body).toMatchObject({ uuid: image, name: 'base-64', os: 'smartos' });
      // Already installed: IMGAPI is not asked again.
      const asked = imgapi.requests.length;
      expect((await postTask(c, 'image_ensure_present', { image_uuid: image })).status).toBe(200);
      expect(imgapi.requests.length).toBe(asked);
    });

    it('image_ensure_present fails for an image IMGAPI does not have', async () => {
      const image = newUuid();
      const r = await postTask(cn, 'image_ensure_present', { image_uuid: image });
      expect(r.status).toBe(500);
      expect(r.body.error).toBe(`an active image "${image}" was not found in image sources`);
    });

    it('image_get knows the images the VMs use', async () => {
      const c = await h.addCn();
      const params = provisionParams(c.uuid);
      expect((await postTask(c, 'machine_create', params)).status).toBe(200);
      const g = await postTask(c, 'image_get', { uuid: params.image_uuid });
      expect(g.status).toBe(200);
      expect(g.body.uuid).toBe(params.image_uuid);
    });
  });

  describe('zfs queries', () => {
    let c: TestCn;
    let vmUuid: string;
    beforeAll(async () => {
      c = await h.addCn();
      const params = provisionParams(c.uuid);
      vmUuid = params.uuid as string;
      expect((await postTask(c, 'machine_create', params)).status).toBe(200);
      expect((await postTask(c, 'machine_create_snapshot', { uuid: vmUuid, snapshot_name: 'before-upgrade' })).status).toBe(200);
    });

    it('zfs_list_pools lists the zpool from sysinfo as an array of rows', async () => {
      const r = await postTask(c, 'zfs_list_pools', {});
      expect(r.status).toBe(200);
      expect(r.body).toEqual([
        { name: 'zones', size: expect.any(String), allocated: expect.any(String), free: expect.any(String), cap: expect.stringMatching(/^\d+%$/), health: 'ONLINE', altroot: '-' },
      ]);
      expect(r.body[0].size).toBe(nicenum(Number(c.cn.sysinfo['Zpool Size in GiB']) * 1024 ** 3));
    });

    // vmadm names a VM's snapshots `<zfs_filesystem>@vmsnap-<name>` (smartos-live src/vm/node_modules/VM.js).
    it('zfs_list_datasets includes the VM dataset and its snapshot', async () => {
      const r = await postTask(c, 'zfs_list_datasets', {});
      expect(r.status).toBe(200);
      const names = r.body.map((d: any) => d.name);
      expect(names).toEqual(expect.arrayContaining(['zones', `zones/${vmUuid}`, `zones/${vmUuid}@vmsnap-before-upgrade`, `zones/cores/${vmUuid}`]));
      const vmDs = r.body.find((d: any) => d.name === `zones/${vmUuid}`);
      expect(vmDs).toEqual({ name: `zones/${vmUuid}`, used: expect.any(String), avail: '10G', refer: expect.any(String), type: 'filesystem', mountpoint: `/zones/${vmUuid}` });
    });

    it('zfs_list_snapshots lists the snapshots under a dataset, and fails for an unknown one', async () => {
      const r = await postTask(c, 'zfs_list_snapshots', { dataset: `zones/${vmUuid}` });
      expect(r.status).toBe(200);
      expect(r.body.map((d: any) => d.name)).toEqual([`zones/${vmUuid}@vmsnap-before-upgrade`]);
      const bad = await postTask(c, 'zfs_list_snapshots', { dataset: 'zones/nope' });
      expect(bad.status).toBe(500);
      // node-zfs's zfs.list runs execFile: its error message carries the command line.
      expect(bad.body.error).toBe(
        'failed to list ZFS datasets: Command failed: /sbin/zfs list -H -o name,used,avail,refer,type,mountpoint -t snapshot -r zones/nope\n' +
          "cannot open 'zones/nope': dataset does not exist\n",
      );
    });

    it('zfs_get_properties answers parseable values per dataset', async () => {
      const r = await postTask(c, 'zfs_get_properties', { dataset: `zones/${vmUuid}`, properties: ['quota', 'mountpoint', 'type'] });
      expect(r.status).toBe(200);
      expect(r.body[`zones/${vmUuid}`]).toEqual({ quota: String(10 * 1024 ** 3), mountpoint: `/zones/${vmUuid}`, type: 'filesystem' });
      const bad = await postTask(c, 'zfs_get_properties', { dataset: 'zones', properties: ['bogus'] });
      expect(bad.status).toBe(500);
      expect(bad.body.error).toMatch(/invalid property 'bogus'/);
      expect((await postTask(c, 'zfs_get_properties', { dataset: '../etc' })).status).toBe(500);
    });

    it('nicenum formats like zfs', () => {
      expect(nicenum(0)).toBe('0');
      expect(nicenum(1000)).toBe('1000');
      expect(nicenum(10 * 1024 ** 3)).toBe('10G');
      expect(nicenum(1.5 * 1024 ** 3)).toBe('1.50G');
      expect(nicenum(25.3 * 1024 ** 3)).toBe('25.3G');
      expect(nicenum(117.6 * 1024)).toBe('118K');
    });
  });
});
