/**
 * `mockcloud set-servers` and the placement flags of create-servers, as an operator runs them
 * (the built CLI against a daemon with its embedded dev headnode): what they set is what CNAPI
 * then answers for the server (ServerGet), as after `sdc-server update` (sdc-cnapi
 * lib/endpoints/servers.js ServerUpdate); bad flags are usage errors that change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuiltDaemon, until, type BuiltDaemon } from './helpers/built-daemon.js';
import { jsonLines, runCli } from './helpers/run-cli.js';

type Obj = Record<string, any>;

describe('mockcloud set-servers', () => {
  let daemon: BuiltDaemon;
  let dd: string[];

  async function cnapiServer(uuid: string): Promise<Obj> {
    const res = await fetch(`${daemon.urls.cnapi}/servers/${uuid}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Obj;
  }

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ servers: 0 });
    dd = ['--data-dir', daemon.dataDir];
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop();
  });

  it('creates CNs with a placement, changes it afterwards by UUID, profile or --all, and refuses bad flags', async () => {
    const made = await runCli(['create-servers', '2', '--profile', 'small', '--traits', '{"ssd": true}', '--reservoir', '-j', ...dd]);
    expect(made.code, made.stderr).toBe(0);
    const [a, b] = (JSON.parse(made.stdout) as { created: Obj[] }).created.map((s) => s.uuid as string);
    const other = await runCli(['create-servers', '1', '-j', ...dd]);
    expect(other.code, other.stderr).toBe(0);
    const c = (JSON.parse(other.stdout) as { created: Obj[] }).created[0]!.uuid as string;
    for (const u of [a!, b!]) expect(await cnapiServer(u)).toMatchObject({ traits: { ssd: true }, reservoir: true, reserved: false });
    expect(await cnapiServer(c)).toMatchObject({ traits: {}, reservoir: false });

    const one = await runCli(['set-servers', '--reserved', a!, ...dd]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toContain(`${a}  {"reserved":true}`);
    expect((await cnapiServer(a!)).reserved).toBe(true);
    expect((await cnapiServer(b!)).reserved).toBe(false);

    const byProfile = await runCli(['set-servers', '--traits', '{}', '--reservoir', 'false', '--profile', 'small', '-j', ...dd]);
    expect(byProfile.code, byProfile.stderr).toBe(0);
    expect((JSON.parse(byProfile.stdout) as { servers: Obj[] }).servers.map((s) => s.uuid).sort()).toEqual([a, b].sort());
    expect(await cnapiServer(b!)).toMatchObject({ traits: {}, reservoir: false });

    const all = await runCli(['set-servers', '--reserved', '--all', ...dd]);
    expect(all.code, all.stderr).toBe(0);
    // The dev DC's headnode server is not one of "all".
    const servers = (await (await fetch(`${daemon.urls.cnapi}/servers`)).json()) as Obj[];
    for (const s of servers) expect(s.reserved, s.hostname).toBe(s.headnode !== true);

    const before = await cnapiServer(c);
    for (const [args, message] of [
      [['set-servers', c], /nothing to set/],
      [['set-servers', '--reserved'], /name the CNs/],
      [['set-servers', '--reserved', '--all', c], /name the CNs/],
      [['set-servers', '--traits', '[1]', c], /--traits must be a JSON object/],
      [['set-servers', '--overprovision-ratios', 'gpu=2', c], /not KEY=N with a key of cpu, ram, disk, io, net/],
      [['set-servers', '--reserved', 'not-a-uuid'], /"not-a-uuid" is not a server UUID/],
      [['create-servers', '2', '--mix', 'small', ...dd], /--mix: bad mix: "small" is not NAME:WEIGHT/],
      [['create-servers', '2', '--mix', 'small:1', '--profile', 'small', ...dd], /--profile or --mix, not both/],
    ] as [string[], RegExp][]) {
      const r = await runCli([...args, ...(args.includes('--data-dir') ? [] : dd)]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect(await cnapiServer(c)).toMatchObject({ reserved: before.reserved, traits: before.traits });
    // A mix naming a profile the daemon lacks: a usage error (exit 2) in the user's flag, nothing made.
    const unknown = await runCli(['create-servers', '2', '--mix', 'small:1,huge:1', ...dd]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--mix: no profile "huge" in this daemon; its profiles: .*; nothing was created/);
    const listed = await until(async () => {
      const r = await runCli(['list-servers', '-j', ...dd]);
      return r.code === 0 ? jsonLines<Obj>(r.stdout) : undefined;
    }, 10_000, 'list-servers');
    expect(listed.map((s) => s.profile).sort()).toEqual(['small', 'small', 'virtual', 'virtual']);
    const status = await runCli(['status', ...dd]);
    expect(status.code, status.stderr).toBe(0);
    // The headnode server is a virtual one too.
    expect(status.stdout).toMatch(/^profiles: +small 2, virtual 2$/m);
  }, 120_000);
});
