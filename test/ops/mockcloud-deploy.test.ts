/**
 * tools/mockcloud-deploy, run as in a headnode's global zone with fake Triton tools on PATH
 * (sdc-sapi, sdc-cnapi, sdc-papi, sdc-vmapi, sdc-imgadm, updates-imgadm, sdc-vmadm, sysinfo,
 * zonename). What the operator relies on: the VM payload (-n prints it) creates a mockcloud
 * zone the way the original tool did, and its user-script brings up mockcloud-setup.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
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
  await writeFake(
    w.bin,
    'sdc-vmapi',
    `record "$@"\n[[ -z \${FAKE_VMAPI_FAIL:-} ]] || { echo 'sdc-vmapi: connect ECONNREFUSED' >&2; exit 1; }\n${http(
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
  // sdc-imgadm: "get" succeeds only for the image already in this DC (or once imported).
  await writeFake(
    w.bin,
    'sdc-imgadm',
    `record "$@"
case $1 in
list) echo ${CURRENT_IMAGE} ;;
get) if [[ $2 == ${CURRENT_IMAGE} || -f $FAKE_STATE/imported-$2 ]]; then echo '{"uuid": "'"$2"'", "version": "2.0.0-current"}'; else echo "ResourceNotFound" >&2; exit 1; fi ;;
import) touch "$FAKE_STATE/imported-$2" ;;
esac`,
  );
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
    const manifest = /svccfg import (\S+)/.exec(script)?.[1];
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
