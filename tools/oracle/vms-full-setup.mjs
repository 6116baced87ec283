#!/usr/bin/env node
/*
 * This Source Code Form is subject to the terms of the Mozilla Public
 * License, v. 2.0. If a copy of the MPL was not distributed with this
 * file, You can obtain one at http://mozilla.org/MPL/2.0/.
 */

/*
 * The one-time setup of a running dev DC for sdc-vmapi's test/vms.full.test.js
 * (docs/dev-headnode.md, "vms.full.test.js, run by hand"):
 *
 *   1. config.json at the top of the sdc-vmapi copy: the dev headnode's CNAPI, IMGAPI, NAPI and
 *      PAPI, the admin UUID; VOLAPI and Moray are named but never called by vms.full.
 *   2. The image vms.full provisions (sdc-smartos 1.6.3, fd2cc906-...) in the dev IMGAPI.
 *   3. A DC's core zones: five admin-owned joyent-minimal VMs of 128 MiB on the headnode server,
 *      tagged smartdc_type=core, which its filter tests expect to find; then waits until each
 *      is running.
 *
 * Safe to run again on the same DC: what is there already is kept. Plain ESM, Node >= 18.
 *
 *   node tools/oracle/vms-full-setup.mjs DATA_DIR SDC_VMAPI_COPY
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const PROG = 'vms-full-setup';
const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
const IMAGE = { uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99', name: 'sdc-smartos', version: '1.6.3' };
const CORE_ROLES = ['assets', 'sapi', 'imgapi', 'napi', 'vmapi'];
const RUNNING_WITHIN_MS = 180_000;

function fail(msg, code = 1) {
  process.stderr.write(`${PROG}: ${msg}\n`);
  process.exit(code);
}

async function call(method, url, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    if (Buffer.isBuffer(body)) init.body = body;
    else {
      init.body = JSON.stringify(body);
      init.headers['content-type'] = 'application/json';
    }
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, body: json, text };
}

async function ok(method, url, body, headers) {
  const res = await call(method, url, body, headers);
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

/** The image IMGAPI holds under IMAGE's UUID is the one this setup imports: the admin's sdc-smartos. */
function isOurImage(image) {
  return image?.uuid === IMAGE.uuid && image.name === IMAGE.name && image.version === IMAGE.version && image.owner === ADMIN;
}

async function ensureImage(imgapi) {
  const have = await call('GET', `${imgapi}/images/${IMAGE.uuid}`);
  if (have.status === 200 && !isOurImage(have.body)) {
    throw new Error(`IMGAPI's image ${IMAGE.uuid} is not the admin's ${IMAGE.name}@${IMAGE.version} (${have.body?.name}@${have.body?.version}, owner ${have.body?.owner}): left as it is`);
  }
  if (have.status === 200 && have.body.state === 'active') return 'kept';
  if (have.status !== 200) {
    await ok('POST', `${imgapi}/images/${IMAGE.uuid}?action=import`, {
      v: 2, uuid: IMAGE.uuid, name: IMAGE.name, version: IMAGE.version, type: 'zone-dataset', os: 'smartos',
      owner: ADMIN, public: true, published_at: new Date().toISOString(),
    });
  }
  const image = await ok('GET', `${imgapi}/images/${IMAGE.uuid}`);
  if (!isOurImage(image)) throw new Error(`IMGAPI's image ${IMAGE.uuid} is not the one imported: left as it is`);
  if (image.state === 'unactivated') {
    await ok('PUT', `${imgapi}/images/${IMAGE.uuid}/file?compression=gzip`, gzipSync('file\n'), { 'content-type': 'application/octet-stream' });
  }
  await ok('POST', `${imgapi}/images/${IMAGE.uuid}?action=activate`);
  return 'imported';
}

async function ensureCoreZones(urls) {
  const [headnode] = await ok('GET', `${urls.cnapi}/servers?headnode=true`);
  if (!headnode) throw new Error('CNAPI lists no headnode server');
  const [admin] = await ok('GET', `${urls.napi}/networks?name=admin`);
  if (!admin) throw new Error('NAPI has no network named admin');
  const [base] = await ok('GET', `${urls.imgapi}/images?name=base-64-lts`);
  if (!base) throw new Error('IMGAPI has no image named base-64-lts');
  const uuids = [];
  for (const role of CORE_ROLES) {
    // The filter narrows the list; what counts is checked on each VM it gave back.
    const listed = await ok('GET', `${urls.vmapi}/vms?owner_uuid=${ADMIN}&tag.smartdc_role=${role}&state=active`);
    const existing = listed.find((vm) => vm.owner_uuid === ADMIN && vm.server_uuid === headnode.uuid && vm.ram === 128 &&
      vm.tags?.smartdc_type === 'core' && vm.tags?.smartdc_role === role && !['destroyed', 'failed'].includes(vm.state));
    if (existing) {
      uuids.push(existing.uuid);
      continue;
    }
    const made = await ok('POST', `${urls.vmapi}/vms`, {
      owner_uuid: ADMIN, brand: 'joyent-minimal', image_uuid: base.uuid, ram: 128, quota: 10,
      server_uuid: headnode.uuid, networks: [{ uuid: admin.uuid }], alias: `${role}0`,
      tags: { smartdc_type: 'core', smartdc_role: role },
    });
    uuids.push(made.vm_uuid);
  }
  const deadline = Date.now() + RUNNING_WITHIN_MS;
  for (const uuid of uuids) {
    for (;;) {
      const vm = await call('GET', `${urls.vmapi}/vms/${uuid}`);
      if (vm.body?.state === 'running') break;
      if (vm.body?.state === 'failed' || Date.now() > deadline) throw new Error(`core zone ${uuid} is ${vm.body?.state ?? vm.status}, not running`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  return { headnode: headnode.uuid, zones: uuids.length };
}

async function main() {
  const [dataDir, copy] = process.argv.slice(2);
  if (!dataDir || !copy || process.argv.length > 4) fail('usage: vms-full-setup.mjs DATA_DIR SDC_VMAPI_COPY', 2);
  const hnFile = path.join(dataDir, 'headnode.json');
  const urls = JSON.parse(await readFile(hnFile, 'utf8').catch(() => fail(`${hnFile}: not there (is the daemon with its dev headnode running?)`)));
  for (const api of ['cnapi', 'vmapi', 'napi', 'imgapi', 'papi']) if (typeof urls[api] !== 'string') fail(`${hnFile} names no ${api}`);
  const config = {
    cnapi: { url: urls.cnapi }, imgapi: { url: urls.imgapi }, napi: { url: urls.napi }, papi: { url: urls.papi },
    // vms.full calls neither; a closed port makes a stray call fail at once.
    volapi: { url: 'http://127.0.0.1:9' }, moray: { host: '127.0.0.1', port: 9 },
    ufdsAdminUuid: ADMIN, user_migration_allowed: false, logLevel: 'info',
  };
  await writeFile(path.join(copy, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  const image = await ensureImage(urls.imgapi);
  const core = await ensureCoreZones(urls);
  process.stdout.write(`${PROG}: config.json written; image ${IMAGE.name}@${IMAGE.version} ${image}; ${core.zones} core zones running on headnode ${core.headnode}\n`);
}

main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
