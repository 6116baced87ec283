/**
 * CNAPI's `POST /servers/:uuid/execute` end to end, through sdc-clients' CNAPI client
 * (`commandExecute`) against the built daemon's embedded dev headnode, with and without
 * `--allow-execute`. The CNAPI side follows sdc-cnapi lib/endpoints/servers.js
 * (Server.execute: `json` callers get `{exitCode, stdout, stderr, ...}`, the others the
 * trimmed stdout or a 500 "Error executing on remote system" for a non-zero exit); the CN
 * side sdc-cn-agent lib/backends/smartos/tasks/command_execute.js (args, env, timeout in ms,
 * `{err, exitCode, signal, stdout, stderr}`); the mock commands smartos-live's sysinfo,
 * uname and src/vm/sbin/vmadm.js.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError, closeClient, cnapiClient, type Client } from '../headnode/helpers/sdc-clients.js';
import { agentUrlOf, postTask, startBuiltDaemon, until, type BuiltDaemon } from './helpers/built-daemon.js';

interface Server {
  uuid: string;
  /** The dev DC's headnode server (issue 20): the tests use a compute node. */
  headnode?: boolean;
  hostname: string;
  status: string;
  /** Set once CNAPI took a heartbeat: the CN's cn-agent takes tasks from then on. */
  last_heartbeat?: string | null;
  sysinfo: Record<string, unknown>;
}

async function firstServer(cnapi: Client): Promise<Server> {
  const listed = await until(
    async () => (await call<Server[]>(cnapi, 'listServers', { extras: 'last_heartbeat' })).find(
        (s) => s.status === 'running' && s.headnode !== true && typeof s.last_heartbeat === 'string',
      ),
    30_000,
    'a running server in CNAPI',
  );
  return call<Server>(cnapi, 'getServer', listed.uuid);
}

describe('CNAPI execute with --allow-execute', () => {
  let daemon: BuiltDaemon;
  let cnapi: Client;
  let server: Server;

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ args: ['--allow-execute'], config: { timings: { startSpreadMs: 100 } } });
    cnapi = cnapiClient(daemon.urls.cnapi);
    server = await firstServer(cnapi);
  });
  afterAll(async () => {
    closeClient(cnapi);
    await daemon?.stop();
  });

  it('runs the script on the CN with args and env; json callers get exit code and both streams', async () => {
    const script = '#!/bin/bash\necho "args: $*"\necho "FOO=$FOO"\necho oops >&2\nexit 0\n';
    const r = await call<Record<string, unknown>>(cnapi, 'commandExecute', server.uuid, script, { args: ['a', 'b'], env: { FOO: 'bar' }, json: true });
    expect(r).toMatchObject({ err: null, exitCode: 0, signal: null, stdout: 'args: a b\nFOO=bar\n', stderr: 'oops\n' });
  });

  it('gives other callers the trimmed stdout, and CNAPI\'s 500 for a non-zero exit', async () => {
    expect(await call(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\necho "  hi  "\n', {})).toBe('hi');
    const err = await callError(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\nexit 7\n', {});
    expect(err.statusCode).toBe(500);
    expect(err.body).toEqual({ code: 'InternalError', message: 'Error executing on remote system' });
    const failed = await call<Record<string, unknown>>(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\nexit 7\n', { json: true });
    expect(failed).toMatchObject({ exitCode: 7, signal: null });
  });

  it('kills a script that runs past its timeout (ms)', async () => {
    const r = await call<Record<string, unknown>>(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\nsleep 20\n', { timeout: 300, json: true });
    expect(r).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });

  it('answers the global-zone commands from the CN: sysinfo, uname -v, hostname, vmadm', async () => {
    // A VM created the way CNAPI creates one: machine_create on the CN's cn-agent.
    const vmUuid = randomUUID();
    const created = await postTask(agentUrlOf(server.sysinfo), server.uuid, 'machine_create', {
      uuid: vmUuid,
      brand: 'joyent-minimal',
      alias: 'exec-test',
      owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
      ram: 256,
      max_physical_memory: 256,
      quota: 10,
      nics: [],
    });
    expect(created.status).toBe(200);
    const script = [
      '#!/bin/bash',
      "sysinfo | grep '\"UUID\"'",
      'uname -v',
      'hostname',
      'vmadm list -H -o uuid,state,alias',
      'vmadm lookup -1 alias=exec-test',
    ].join('\n');
    const out = await call<string>(cnapi, 'commandExecute', server.uuid, script, {});
    const lines = out.split('\n');
    expect(lines[0]).toContain(server.uuid);
    expect(lines[1]).toBe(`joyent_${String(server.sysinfo['Live Image'])}`);
    expect(lines[2]).toBe(server.hostname);
    expect(lines[3]!.split(/\s+/)).toEqual([vmUuid, 'running', 'exec-test']);
    expect(lines[4]).toBe(vmUuid);
  });
});

describe('CNAPI execute without --allow-execute (the default)', () => {
  let daemon: BuiltDaemon;
  let cnapi: Client;

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ config: { timings: { startSpreadMs: 100 } } });
    cnapi = cnapiClient(daemon.urls.cnapi);
  });
  afterAll(async () => {
    closeClient(cnapi);
    await daemon?.stop();
  });

  it('runs nothing: a failed execution that says so, and CNAPI\'s 500 for plain callers', async () => {
    const server = await firstServer(cnapi);
    const r = await call<Record<string, unknown>>(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\necho ran\n', { json: true });
    expect(r).toMatchObject({ exitCode: 126, signal: null, stdout: '' });
    expect(String(r.stderr)).toMatch(/command_execute is not supported on a mock CN/);
    const err = await callError(cnapi, 'commandExecute', server.uuid, '#!/bin/sh\necho ran\n', {});
    expect(err.statusCode).toBe(500);
    expect(err.body?.message).toBe('Error executing on remote system');
  });
});
