/**
 * The SMF manifests: well-formed XML that is valid against the service_bundle DTD (restated in
 * helpers/service-bundle-dtd.ts, checked offline), and what svc.startd will do with them: the
 * right FMRIs, methods that exist in this repo and are executable, timeouts above the waits the
 * methods do themselves, the daemon as a restartable contract service, the setup as a transient
 * one that refresh re-runs.
 */
import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findAll, validateServiceBundle } from './helpers/service-bundle-dtd.js';
import { REPO_ROOT } from './helpers/run.js';
import { parseXml, type XmlElement } from './helpers/xml.js';

const INSTALL_DIR = '/opt/triton/mockcloud';
const MANIFESTS = ['smf/manifests/mockcloud.xml', 'smf/manifests/mockcloud-setup.xml'];

async function load(rel: string) {
  const doc = parseXml(await readFile(path.join(REPO_ROOT, rel), 'utf8'));
  const services = findAll(doc.root, 'service');
  expect(services).toHaveLength(1);
  return { doc, service: services[0]! };
}

function methods(service: XmlElement): Record<string, XmlElement> {
  return Object.fromEntries(service.children.filter((c) => c.name === 'exec_method').map((m) => [m.attrs.name!, m]));
}

function propval(service: XmlElement, group: string, name: string): string | undefined {
  const pg = service.children.find((c) => c.name === 'property_group' && c.attrs.name === group);
  return pg?.children.find((c) => c.name === 'propval' && c.attrs.name === name)?.attrs.value;
}

function dependencyFmris(service: XmlElement): string[] {
  return service.children
    .filter((c) => c.name === 'dependency')
    .flatMap((d) => d.children.filter((c) => c.name === 'service_fmri').map((f) => f.attrs.value!));
}

/** A default in a bash script: NAME=${VAR:-<number>}. */
async function scriptDefault(rel: string, variable: string): Promise<number> {
  const text = await readFile(path.join(REPO_ROOT, rel), 'utf8');
  const m = new RegExp(`\\$\\{${variable}:-(\\d+)\\}`).exec(text);
  if (!m) throw new Error(`${rel} has no default for ${variable}`);
  return Number(m[1]);
}

describe.each(MANIFESTS)('%s', (rel) => {
  it('is well-formed XML and valid against the service_bundle DTD', async () => {
    const { doc } = await load(rel);
    expect(doc.doctype).toEqual({ root: 'service_bundle', systemId: '/usr/share/lib/xml/dtd/service_bundle.dtd.1' });
    expect(doc.root.attrs.type).toBe('manifest');
    expect(validateServiceBundle(doc)).toEqual([]);
  });

  it('has a default instance, a template name, and methods svc.startd can run', async () => {
    const { service } = await load(rel);
    expect(findAll(service, 'create_default_instance')).toHaveLength(1);
    expect(findAll(service, 'common_name')[0]?.children[0]?.text).toBeTruthy();
    const m = methods(service);
    expect(Object.keys(m).sort()).toEqual(['refresh', 'start', 'stop']);
    for (const method of Object.values(m)) {
      expect(method.attrs.timeout_seconds).toMatch(/^[1-9][0-9]*$/);
      const exec = method.attrs.exec!;
      if (exec.startsWith(':')) {
        expect([':kill', ':true']).toContain(exec);
        continue;
      }
      // Methods are scripts shipped under the install dir: they must exist here, executable.
      const program = exec.split(/\s+/)[0]!;
      expect(program.startsWith(`${INSTALL_DIR}/`)).toBe(true);
      await access(path.join(REPO_ROOT, program.slice(INSTALL_DIR.length + 1)), constants.X_OK);
    }
    // Every method and the service itself get a PATH that finds the mockcloud install.
    const envvars = findAll(service, 'envvar');
    const pathVar = envvars.find((e) => e.attrs.name === 'PATH')?.attrs.value ?? '';
    expect(pathVar.split(':')).toEqual(expect.arrayContaining([`${INSTALL_DIR}/bin`, '/usr/bin', '/usr/sbin']));
  });
});

describe('the daemon service (mockcloud.xml)', () => {
  it('is the FMRI mockcloud-setup imports, enables and waits for', async () => {
    const { service } = await load('smf/manifests/mockcloud.xml');
    const setup = await readFile(path.join(REPO_ROOT, 'smf/method/mockcloud-setup'), 'utf8');
    expect(setup).toContain(`DAEMON_FMRI=svc:/${service.attrs.name}:default`);
    expect(setup).toContain('DAEMON_MANIFEST=$INSTALL_DIR/smf/manifests/mockcloud.xml');
    // Setup enables it once config.json exists; it must not start before that on import.
    expect(findAll(service, 'create_default_instance')[0]?.attrs.enabled).toBe('false');
  });

  it('is a contract service restarted on failure, stopped with SIGTERM, after network and local filesystems', async () => {
    const { service } = await load('smf/manifests/mockcloud.xml');
    expect(propval(service, 'startd', 'duration')).toBe('contract');
    // ignore_error=core,signal would stop svc.startd from restarting a crashed daemon.
    expect(propval(service, 'startd', 'ignore_error')).toBeUndefined();
    const m = methods(service);
    expect(m.start?.attrs.exec).toBe(`${INSTALL_DIR}/smf/method/mockcloud start`);
    expect(m.stop?.attrs.exec).toBe(':kill');
    expect(dependencyFmris(service)).toEqual(
      expect.arrayContaining(['svc:/milestone/network:default', 'svc:/system/filesystem/local']),
    );
  });

  it('does not depend on the setup service, which waits for it (that would deadlock at first boot)', async () => {
    const { service } = await load('smf/manifests/mockcloud.xml');
    expect(dependencyFmris(service).filter((f) => f.includes('mockcloud-setup'))).toEqual([]);
    expect(findAll(service, 'dependent')).toEqual([]);
  });

  it('gives the start method more time than it waits for the daemon, and names the data dir', async () => {
    const { service } = await load('smf/manifests/mockcloud.xml');
    const startTimeout = Number(methods(service).start?.attrs.timeout_seconds);
    expect(await scriptDefault('smf/method/mockcloud', 'MOCKCLOUD_START_WAIT_SECONDS')).toBeLessThan(startTimeout);
    const dataDir = findAll(service, 'envvar').find((e) => e.attrs.name === 'MOCKCLOUD_DATA_DIR');
    expect(dataDir?.attrs.value).toBe('/data/mockcloud');
  });
});

describe('the setup service (mockcloud-setup.xml)', () => {
  it('is transient, enabled on import, and re-runs the method on refresh', async () => {
    const { service } = await load('smf/manifests/mockcloud-setup.xml');
    expect(service.attrs.name).toBe('triton/mockcloud-setup');
    expect(propval(service, 'startd', 'duration')).toBe('transient');
    expect(findAll(service, 'create_default_instance')[0]?.attrs.enabled).toBe('true');
    const m = methods(service);
    expect(m.start?.attrs.exec).toBe(`${INSTALL_DIR}/smf/method/mockcloud-setup`);
    expect(m.refresh?.attrs.exec).toBe(m.start?.attrs.exec);
    expect(dependencyFmris(service)).toContain('svc:/system/filesystem/local');
  });

  it('gives the method more time than its own bounded wait for the daemon', async () => {
    const { service } = await load('smf/manifests/mockcloud-setup.xml');
    const wait = await scriptDefault('smf/method/mockcloud-setup', 'MOCKCLOUD_SETUP_WAIT_SECONDS');
    for (const name of ['start', 'refresh']) {
      expect(wait).toBeLessThan(Number(methods(service)[name]?.attrs.timeout_seconds));
    }
  });
});

describe('the manifest checker itself', () => {
  const good = `<?xml version="1.0"?>
<!DOCTYPE service_bundle SYSTEM "/usr/share/lib/xml/dtd/service_bundle.dtd.1">
<service_bundle type="manifest" name="x">
  <service name="x/y" type="service" version="1">
    <create_default_instance enabled="true"/>
    <exec_method name="start" type="method" exec="/bin/true" timeout_seconds="10"/>
    <stability value="Unstable"/>
    <template><common_name><loctext xml:lang="C">x &amp; y</loctext></common_name></template>
  </service>
</service_bundle>`;

  it('accepts a minimal valid manifest', () => {
    const doc = parseXml(good);
    expect(validateServiceBundle(doc)).toEqual([]);
    expect(findAll(doc.root, 'loctext')[0]?.text).toBe('x & y');
  });

  it.each([
    ['a mismatched closing tag', good.replace('</template>', '</templat>'), /closes <template>/],
    ['a bare ampersand', good.replace('x &amp; y', 'x & y'), /bare "&"/],
    ['an unquoted attribute', good.replace('version="1"', 'version=1'), /not quoted/],
    ['a duplicate attribute', good.replace('version="1"', 'version="1" version="2"'), /duplicate attribute/],
    ['text after the root', `${good}\n<extra/>`, /after the root/],
  ])('rejects malformed XML: %s', (_label, xml, message) => {
    expect(() => parseXml(xml)).toThrow(message);
  });

  it.each([
    [
      'children out of DTD order',
      good.replace(
        '<create_default_instance enabled="true"/>\n    <exec_method name="start" type="method" exec="/bin/true" timeout_seconds="10"/>',
        '<exec_method name="start" type="method" exec="/bin/true" timeout_seconds="10"/>\n    <create_default_instance enabled="true"/>',
      ),
      /children \[exec_method, create_default_instance/,
    ],
    ['a missing required attribute', good.replace(' timeout_seconds="10"', ''), /required attribute timeout_seconds missing/],
    ['a value outside an enumeration', good.replace('value="Unstable"', 'value="Wobbly"'), /value="Wobbly" is not one of/],
    ['an undeclared element', good.replace('<stability value="Unstable"/>', '<stability value="Unstable"/><bogus/>'), /<bogus>: element not declared|do not match/],
    ['an undeclared attribute', good.replace('<create_default_instance enabled="true"/>', '<create_default_instance enabled="true" when="now"/>'), /attribute when not declared/],
    ['a template without common_name', good.replace(/<template>.*<\/template>/, '<template></template>'), /<template>: children \[\] do not match/],
  ])('reports invalid structure: %s', (_label, xml, message) => {
    expect(validateServiceBundle(parseXml(xml)).join('\n')).toMatch(message);
  });
});
