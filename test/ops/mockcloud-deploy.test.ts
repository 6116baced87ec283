/**
 * tools/mockcloud-deploy, run as in a headnode's global zone with fake Triton tools on PATH
 * (sdc-sapi, sdc-cnapi, sdc-papi, sdc-vmapi, sdc-imgadm, updates-imgadm, sdc-vmadm, sysinfo,
 * zonename). What the operator relies on: the VM payload (-n prints it) creates a mockcloud
 * zone the way the original tool did, and its user-script brings up mockcloud-setup.
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { create as tarCreate } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFakeWorld, writeFake, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';
import { parseXml } from './helpers/xml.js';

const DEPLOY = path.join(REPO_ROOT, 'tools/mockcloud-deploy');
const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
const HEADNODE = '44454c4c-4800-1034-804a-b2c04f354d32';
const CN = '564d2b17-0f1c-7d2e-3c0e-9d7f1a2b3c4d';
const PKG = '2b5c9e94-6a3a-4b4f-bc5d-5f8a4c9b1e01';
const LATEST_IMAGE = 'c1a2b3c4-d5e6-47f8-9a0b-1c2d3e4f5a6b';
const CURRENT_IMAGE = 'a9b8c7d6-e5f4-43a2-b1c0-d9e8f7a6b5c4';
const BASE_IMAGE = '1d05e788-5409-11eb-b12f-037bd7fee4ee';
const ZONE = 'f2b1c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
/** The image name mockcloud-deploy looks for is the one `npm run release` gives its images. */
const IMAGE_NAME = /export const IMAGE_NAME = '([^']+)'/.exec(readFileSync(path.join(REPO_ROOT, 'tools/release.mjs'), 'utf8'))![1]!;

/** An sdc-* style answer: HTTP status line and headers, a blank line, the JSON body. */
const http = (status: string, body: string) =>
  `printf 'HTTP/1.1 ${status}\\r\\nContent-Type: application/json\\r\\nServer: test\\r\\n\\r\\n'
cat <<'EOJ'
${body}
EOJ`;

async function addTritonFakes(w: FakeWorld): Promise<void> {
  await writeFake(w.bin, 'zonename', 'record "$@"\necho "${FAKE_ZONENAME:-global}"');
  await writeFake(
    w.bin,
    'sysinfo',
    `record "$@"\nprintf '{"UUID": "${HEADNODE}", "Hostname": "headnode", "Boot Parameters": {"headnode": "%s"}}\\n' "\${FAKE_HEADNODE:-true}"`,
  );
  await writeFake(
    w.bin,
    'sdc-sapi',
    `record "$@"\n${http('200 OK', JSON.stringify([{ name: 'sdc', metadata: { ufds_admin_uuid: ADMIN, dns_domain: 'example.com', datacenter_name: 'us-test-1' } }]))}`,
  );
  await writeFake(
    w.bin,
    'sdc-cnapi',
    `record "$@"
case $1 in
/servers/${HEADNODE})
${http('200 OK', JSON.stringify({ uuid: HEADNODE, hostname: 'headnode' }))}
;;
/servers/${CN})
${http('200 OK', JSON.stringify({ uuid: CN, hostname: 'cn7' }))}
;;
'/servers?hostname=cn7')
${http('200 OK', JSON.stringify([{ uuid: CN, hostname: 'cn7' }]))}
;;
'/servers?hostname='*)
${http('200 OK', '[]')}
;;
*)
${http('404 Not Found', JSON.stringify({ code: 'ResourceNotFound', message: 'server not found' }))}
exit 1
;;
esac`,
  );
  await writeFake(
    w.bin,
    'sdc-papi',
    `record "$@"
if [[ $1 == '/packages?name=sample-4G' ]]; then
${http('200 OK', JSON.stringify([{ uuid: PKG, name: 'sample-4G' }]))}
else
${http('200 OK', '[]')}
fi`,
  );
  // Existing zones: mockcloud0 and mockcloud2 (so the next is mockcloud3), and look-alikes.
  // Asked for one alias: the zone sdc-vmadm created, running on $FAKE_ZONE_SERVER (default
  // this headnode), once it has been created.
  await writeFake(
    w.bin,
    'sdc-vmapi',
    `record "$@"\n[[ -z \${FAKE_VMAPI_FAIL:-} ]] || { echo 'sdc-vmapi: connect ECONNREFUSED' >&2; exit 1; }
if [[ $1 == *alias=* ]]; then
    printf 'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\n\\r\\n'
    if [[ -f $FAKE_STATE/vmadm-create.json ]]; then
        echo '[{"uuid": "${ZONE}", "alias": "mockcloud3", "state": "running", "server_uuid": "'"\${FAKE_ZONE_SERVER:-${HEADNODE}}"'"}]'
    else
        echo '[]'
    fi
    exit 0
fi
${http(
      '200 OK',
      JSON.stringify([
        { uuid: 'u0', alias: 'mockcloud0' },
        { uuid: 'u2', alias: 'mockcloud2' },
        { uuid: 'u3', alias: 'mockcloud-old' },
        { uuid: 'u4', alias: 'imgapi0' },
      ]),
    )}`,
  );
  await writeFake(
    w.bin,
    'updates-imgadm',
    `record "$@"
case "$*" in
*list*) echo ${LATEST_IMAGE} ;;
*get*) echo '{"uuid": "'"\${@: -1}"'", "name": "mockcloud", "version": "2.0.0-latest"}' ;;
esac`,
  );
  // sdc-imgadm: "get" succeeds only for the images already in this DC (or once imported);
  // "list name=X --latest" answers the newest X: ours, or the base image for a tarball.
  await writeFake(
    w.bin,
    'sdc-imgadm',
    `record "$@"
case $1 in
list) case $2 in name=${IMAGE_NAME}) echo ${CURRENT_IMAGE} ;; name=minimal-64-lts) [[ -n \${FAKE_NO_BASE:-} ]] || echo ${BASE_IMAGE} ;; esac ;;
get) if [[ $2 == ${CURRENT_IMAGE} || $2 == ${BASE_IMAGE} || -f $FAKE_STATE/imported-$2 ]]; then echo '{"uuid": "'"$2"'", "version": "2.0.0-current"}'; else echo "ResourceNotFound" >&2; exit 1; fi ;;
import) if [[ $2 == -m ]]; then u=$(sed -n 's/.*"uuid": *"\\([^"]*\\)".*/\\1/p' "$3"); touch "$FAKE_STATE/imported-$u"; else touch "$FAKE_STATE/imported-$2"; fi ;;
esac`,
  );
  // In the global zone: zlogin into the new zone, sdc-oneachnode to another server (recorded).
  await writeFake(w.bin, 'zlogin', 'record "$@"');
  await writeFake(w.bin, 'sdc-oneachnode', 'record "$@"');
  await writeFake(
    w.bin,
    'sdc-vmadm',
    `record "$@"\ncat >"$FAKE_STATE/vmadm-create.json"\necho "Creating VM 1b2c (job 3d4e)"`,
  );
}

let world: FakeWorld;

beforeEach(async () => {
  world = await makeFakeWorld(['svcs', 'svccfg']);
  await addTritonFakes(world);
});

afterEach(async () => {
  await world.cleanup();
});

const deploy = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  run(DEPLOY, args, { env: { ...world.env, ...env }, timeoutMs: 30_000 });

function expectedPayload(overrides: Record<string, unknown> = {}) {
  return {
    alias: 'mockcloud3',
    brand: 'joyent-minimal',
    owner_uuid: ADMIN,
    billing_id: PKG,
    networks: [{ name: 'admin' }],
    server_uuid: HEADNODE,
    image_uuid: LATEST_IMAGE,
    delegate_dataset: true,
    customer_metadata: {
      'user-script': expect.stringContaining('mockcloud-setup.xml'),
      ufdsAdmin: ADMIN,
      dnsDomain: 'example.com',
      mockcloudNumServers: '7',
    },
    tags: { smartdc_role: 'mockcloud' },
    ...overrides,
  };
}

describe('mockcloud-deploy', () => {
  it('-h prints usage and exits 0', async () => {
    const r = await deploy(['-h']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Usage:/);
    for (const opt of ['-y', '-n', '-i IMAGE', 'DEPLOY-SERVER', 'NUM-MOCK-SERVERS']) expect(r.stdout).toContain(opt);
  });

  it('-n prints the VM payload (admin network, delegated dataset, metadata, role tag) and creates nothing', async () => {
    const r = await deploy(['-n', 'current', '7']);
    expect(r.stderr).toBe('');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expectedPayload());
    const calls = await world.calls();
    expect(calls.some((c) => c[0] === 'sdc-vmadm')).toBe(false);
    expect(calls.some((c) => c[0] === 'sdc-imgadm' && c[1] === 'import')).toBe(false);
  });

  it('-n -i current with a server hostname uses the DC image and that server', async () => {
    const r = await deploy(['-n', '-i', 'current', 'cn7', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(
      expectedPayload({
        server_uuid: CN,
        image_uuid: CURRENT_IMAGE,
        customer_metadata: expect.objectContaining({ mockcloudNumServers: '2' }),
      }),
    );
    expect(await world.callsOf('sdc-cnapi')).toContainEqual(['sdc-cnapi', '/servers?hostname=cn7']);
  });

  it('-n with -a and -p overrides alias and package', async () => {
    const r = await deploy(['-n', '-a', 'mockcloud-big', '-p', 'sample-4G', CN, '0']);
    expect(r.code, r.stderr).toBe(0);
    const payload = JSON.parse(r.stdout) as { alias: string; server_uuid: string };
    expect(payload.alias).toBe('mockcloud-big');
    expect(payload.server_uuid).toBe(CN);
  });

  it('-y imports the image when missing and creates the zone with the same payload', async () => {
    const dry = JSON.parse((await deploy(['-n', 'current', '7'])).stdout) as unknown;
    await world.clearCalls();
    const r = await deploy(['-y', 'current', '7']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Creating VM');
    const created = JSON.parse(await readFile(path.join(world.state, 'vmadm-create.json'), 'utf8')) as unknown;
    expect(created).toEqual(dry);
    const imgadm = await world.callsOf('sdc-imgadm');
    expect(imgadm).toContainEqual(['sdc-imgadm', 'import', LATEST_IMAGE, '-S', 'https://updates.joyent.com?channel=dev']);
    expect(await world.callsOf('sdc-vmadm')).toEqual([['sdc-vmadm', 'create']]);
  });

  it("the zone's user-script imports mockcloud-setup once (every boot runs it)", async () => {
    const payload = JSON.parse((await deploy(['-n', 'current', '1'])).stdout) as {
      customer_metadata: Record<string, string>;
    };
    const script = payload.customer_metadata['user-script']!;
    // It names the manifest this repo ships, and the FMRI in that manifest.
    const manifest = /manifest=(\S+)/.exec(script)?.[1];
    expect(manifest).toBe('/opt/triton/mockcloud/smf/manifests/mockcloud-setup.xml');
    const doc = parseXml(await readFile(path.join(REPO_ROOT, 'smf/manifests/mockcloud-setup.xml'), 'utf8'));
    const service = doc.root.children.find((c) => c.name === 'service');
    expect(script).toContain(`svc:/${service?.attrs.name}:default`);

    // Run it twice against fake svcs/svccfg: the first boot imports, the next boots do not.
    const scriptFile = path.join(world.dir, 'user-script');
    await writeFile(scriptFile, script.replace('/opt/triton/mockcloud', REPO_ROOT));
    await chmod(scriptFile, 0o755);
    await world.clearCalls();
    expect((await run(scriptFile, [], { env: world.env })).code).toBe(0);
    expect((await run(scriptFile, [], { env: world.env })).code).toBe(0);
    expect(await world.callsOf('svccfg')).toEqual([
      ['svccfg', 'import', path.join(REPO_ROOT, 'smf/manifests/mockcloud-setup.xml')],
    ]);
  });
});

describe('mockcloud-deploy refuses clearly', () => {
  it.each([
    ['outside the global zone', ['-n', 'current', '3'], { FAKE_ZONENAME: 'f00' }, /global zone/],
    ['on a compute node', ['-n', 'current', '3'], { FAKE_HEADNODE: 'false' }, /not a headnode/],
    ['a count that is not a number', ['-n', 'current', 'many'], {}, /not a whole number: 'many'/],
    ['an unknown server', ['-n', 'nosuchhost', '3'], {}, /could not find server 'nosuchhost'/],
    ['a missing package', ['-n', '-p', 'nope', 'current', '3'], {}, /no 'nope' package/],
    ['an image that is not a UUID', ['-n', '-i', 'mockcloud-2.0', 'current', '3'], {}, /image is not a UUID/],
    ['missing arguments', ['-y', 'current'], {}, /expected DEPLOY-SERVER and NUM-MOCK-SERVERS/],
    ['VMAPI down (no alias can be chosen)', ['-n', 'current', '3'], { FAKE_VMAPI_FAIL: '1' }, /cannot list .* in VMAPI/],
  ])('%s', async (_label, args, env, message) => {
    const r = await deploy(args, env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(await world.callsOf('sdc-vmadm')).toEqual([]);
  });
});

describe('mockcloud-deploy picks only mockcloud-ts images', () => {
  it('names its images as `npm run release` does, never `mockcloud` (the original triton-mockcloud\'s)', async () => {
    expect(IMAGE_NAME).toBe('mockcloud-ts');
    expect((await deploy(['-n', 'current', '1'])).code).toBe(0);
    expect(await world.callsOf('updates-imgadm')).toContainEqual(['updates-imgadm', '-C', 'dev', 'list', '-H', '-o', 'uuid', '--latest', `name=${IMAGE_NAME}`]);
    await world.clearCalls();
    const r = await deploy(['-n', '-i', 'current', 'current', '1']);
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('sdc-imgadm')).toContainEqual(['sdc-imgadm', 'list', `name=${IMAGE_NAME}`, '--latest', '-H', '-o', 'uuid']);
    const calls = (await world.calls()).flat().join(' ');
    expect(calls).not.toMatch(/name=mockcloud(\s|$)/);
  });
});

describe('mockcloud-deploy -i FILE', () => {
  /** A release tarball as tools/release.mjs lays it out (only what the deploy reads). */
  async function makeTarball(release: Record<string, unknown> | undefined, name = 'mockcloud-ts-pkg-test.tar.gz'): Promise<string> {
    const stage = path.join(world.dir, 'stage');
    const install = path.join(stage, 'root/opt/triton/mockcloud');
    await mkdir(path.join(install, 'smf/manifests'), { recursive: true });
    await writeFile(path.join(install, 'smf/manifests/mockcloud-setup.xml'), '<service_bundle/>\n');
    if (release) await writeFile(path.join(install, 'release.json'), JSON.stringify(release));
    const file = path.join(world.dir, name);
    await tarCreate({ gzip: true, file, cwd: stage, portable: true }, ['root']);
    return file;
  }
  const RELEASE = { name: 'mockcloud', image: 'mockcloud-ts', version: '0.1.0', stamp: 'main-20260101T000000Z-g1234567' };

  it('-n with a release tarball: the zone is of the newest minimal-64-lts, the tarball to be installed', async () => {
    const tarball = await makeTarball(RELEASE);
    const r = await deploy(['-n', '-i', tarball, 'current', '7']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expectedPayload({ image_uuid: BASE_IMAGE }));
    expect(r.stderr).toContain(`then ${tarball} would be installed into the zone`);
    expect(await world.callsOf('sdc-vmadm')).toEqual([]);
    // -b names the base image instead.
    const other = 'c0ffee00-1111-4222-8333-444455556666';
    const withBase = await deploy(['-n', '-i', tarball, '-b', other, 'current', '7']);
    expect(JSON.parse(withBase.stdout)).toEqual(expectedPayload({ image_uuid: other }));
  });

  it('-y with a release tarball: creates the zone, waits for it, extracts the tarball at its zone path, imports mockcloud-setup', async () => {
    const tarball = await makeTarball(RELEASE);
    const zones = path.join(world.dir, 'zones');
    await mkdir(path.join(zones, ZONE, 'root'), { recursive: true });
    const r = await deploy(['-y', '-i', tarball, 'current', '7'], {
      MOCKCLOUD_DEPLOY_ZONES_DIR: zones,
      MOCKCLOUD_DEPLOY_POLL_SECONDS: '0.1',
    });
    expect(r.code, r.stderr).toBe(0);
    const created = JSON.parse(await readFile(path.join(world.state, 'vmadm-create.json'), 'utf8')) as { image_uuid: string };
    expect(created.image_uuid).toBe(BASE_IMAGE);
    // The tarball's root/ is the zone's /.
    const installed = JSON.parse(await readFile(path.join(zones, ZONE, 'root/opt/triton/mockcloud/release.json'), 'utf8')) as unknown;
    expect(installed).toEqual(RELEASE);
    expect(await world.callsOf('zlogin')).toEqual([
      ['zlogin', ZONE, '/usr/sbin/svccfg', 'import', '/opt/triton/mockcloud/smf/manifests/mockcloud-setup.xml'],
    ]);
    expect(await world.callsOf('sdc-oneachnode')).toEqual([]);
    expect(r.stderr).toContain(`Installed ${path.basename(tarball)} into ${ZONE}`);
  });

  it('-y with a release tarball on another server: copies it there and installs it with sdc-oneachnode', async () => {
    const tarball = await makeTarball(RELEASE);
    const r = await deploy(['-y', '-i', tarball, 'cn7', '2'], { FAKE_ZONE_SERVER: CN, MOCKCLOUD_DEPLOY_POLL_SECONDS: '0.1' });
    expect(r.code, r.stderr).toBe(0);
    const calls = await world.callsOf('sdc-oneachnode');
    expect(calls[0]).toEqual(['sdc-oneachnode', '-n', CN, '-d', '/var/tmp', '-g', tarball]);
    const remote = `/var/tmp/${path.basename(tarball)}`;
    expect(calls[1]).toEqual([
      'sdc-oneachnode',
      '-n',
      CN,
      `cd /zones/${ZONE} && gzip -dc ${remote} | tar -xf - && rm -f ${remote} && zlogin ${ZONE} /usr/sbin/svccfg import /opt/triton/mockcloud/smf/manifests/mockcloud-setup.xml`,
    ]);
    expect(await world.callsOf('zlogin')).toEqual([]);
  });

  it('with an image manifest: imports it and its file into IMGAPI, and the zone runs that image', async () => {
    const uuid = '7b5e3a2c-9d8f-4e1a-b6c5-0f1e2d3c4b5a';
    const manifest = path.join(world.dir, 'mockcloud-ts-test.imgmanifest');
    await writeFile(manifest, JSON.stringify({ v: 2, uuid, name: 'mockcloud-ts', version: '0.1.0', type: 'zone-dataset', os: 'smartos' }));
    await writeFile(path.join(world.dir, 'mockcloud-ts-test.zfs.gz'), 'not really a zfs stream');
    const dry = await deploy(['-n', '-i', manifest, 'current', '7']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual(expectedPayload({ image_uuid: uuid }));
    expect((await world.callsOf('sdc-imgadm')).some((c) => c[1] === 'import')).toBe(false);

    const r = await deploy(['-y', '-i', manifest, 'current', '7']);
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('sdc-imgadm')).toContainEqual([
      'sdc-imgadm', 'import', '-m', manifest, '-f', path.join(world.dir, 'mockcloud-ts-test.zfs.gz'),
    ]);
    expect((JSON.parse(await readFile(path.join(world.state, 'vmadm-create.json'), 'utf8')) as { image_uuid: string }).image_uuid).toBe(uuid);
    expect(await world.callsOf('zlogin')).toEqual([]); // the image has mockcloud installed
  });

  it.each([
    ['a tarball that is not a mockcloud-ts release', async () => makeTarball(undefined, 'other.tar.gz'), {}, /is not a mockcloud-ts release tarball/],
    ['a release of another image', async () => makeTarball({ ...RELEASE, image: 'mockcloud' }), {}, /is not a mockcloud-ts release tarball/],
    ['a tarball with no base image in the DC', async () => makeTarball(RELEASE), { FAKE_NO_BASE: '1' }, /no minimal-64-lts image .*-b/],
    ['a missing file', async () => path.join(world.dir, 'nope.tar.gz'), {}, /no such release tarball/],
    [
      'an original triton-mockcloud image manifest',
      async () => {
        const f = path.join(world.dir, 'old.imgmanifest');
        await writeFile(f, JSON.stringify({ uuid: CURRENT_IMAGE, name: 'mockcloud', version: '1.0.0' }));
        await writeFile(path.join(world.dir, 'old.zfs.gz'), 'x');
        return f;
      },
      {},
      /is not a mockcloud-ts image \(its name is 'mockcloud'/,
    ],
    [
      'a manifest without its image file',
      async () => {
        const f = path.join(world.dir, 'lonely.imgmanifest');
        await writeFile(f, JSON.stringify({ uuid: CURRENT_IMAGE, name: 'mockcloud-ts', version: '1.0.0' }));
        return f;
      },
      {},
      /no image file beside .*lonely\.imgmanifest/,
    ],
  ])('refuses %s', async (_label, make, env, message) => {
    const file = await make();
    const r = await deploy(['-y', '-i', file, 'current', '3'], env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(await world.callsOf('sdc-vmadm')).toEqual([]);
  });
});
