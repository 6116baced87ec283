/*
 * This Source Code Form is subject to the terms of the Mozilla Public
 * License, v. 2.0. If a copy of the MPL was not distributed with this
 * file, You can obtain one at http://mozilla.org/MPL/2.0/.
 */

/*
 * Part of smf/method/mockcloud-setup: writes the daemon's <data dir>/config.json from the
 * zone's mdata, so the daemon finds CNAPI/VMAPI/NAPI/IMGAPI at http://<svc>.<dc>.<domain> and
 * binds the mock CNs' sockets to the zone's admin IP (from sdc:nics, picked the way every
 * Triton agent picks it: triton-netconfig's adminIpFromNicsArray).
 *
 * Keys the operator added to config.json (logLevel, portRange, ...) are kept; only the keys
 * below are managed. The file is replaced atomically (temp file, fsync, rename) and only when
 * its content changes.
 *
 * Input (environment, all set by mockcloud-setup):
 *   MC_CONFIG_FILE   the file to write
 *   MC_DC            sdc:datacenter_name
 *   MC_DNS_DOMAIN    dnsDomain
 *   MC_NICS          sdc:nics (JSON array)
 *   MC_ADMIN_UUID    ufdsAdmin (optional)
 *   MC_INSTALL_DIR   where node_modules/triton-netconfig is
 *
 * Output: "changed" or "unchanged" on stdout. Exit 2 with a message on bad input.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DNS_LABELS_RE = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

function fail(message) {
  process.stderr.write(`write-daemon-config: ${message}\n`);
  process.exit(2);
}

function required(name) {
  const value = process.env[name];
  if (value === undefined || value === '') fail(`${name} is not set`);
  return value;
}

const file = required('MC_CONFIG_FILE');
const dc = required('MC_DC');
const domain = required('MC_DNS_DOMAIN');
const nicsText = required('MC_NICS');
const adminUuid = process.env.MC_ADMIN_UUID || undefined;
const installDir = required('MC_INSTALL_DIR');

if (!DNS_LABELS_RE.test(dc)) fail(`sdc:datacenter_name ${JSON.stringify(dc)} is not a DNS name`);
if (!DNS_LABELS_RE.test(domain)) fail(`dnsDomain ${JSON.stringify(domain)} is not a DNS name`);
if (adminUuid !== undefined && !UUID_RE.test(adminUuid)) fail(`ufdsAdmin ${JSON.stringify(adminUuid)} is not a UUID`);

let nics;
try {
  nics = JSON.parse(nicsText);
} catch (err) {
  fail(`sdc:nics is not JSON: ${err.message}`);
}
if (!Array.isArray(nics)) fail('sdc:nics is not a JSON array');

const netconfig = createRequire(path.join(installDir, 'package.json'))('triton-netconfig');
const bindIp = netconfig.adminIpFromNicsArray(nics);
if (!bindIp) fail('sdc:nics has no admin NIC: the mockcloud zone must be on the admin network');

const managed = {
  datacenterName: dc,
  dnsDomain: domain,
  cnapiUrl: `http://cnapi.${dc}.${domain}`,
  vmapiUrl: `http://vmapi.${dc}.${domain}`,
  napiUrl: `http://napi.${dc}.${domain}`,
  imgapiUrl: `http://imgapi.${dc}.${domain}`,
  bindIp,
};
if (adminUuid !== undefined) managed.adminUuid = adminUuid.toLowerCase();

let previousText;
let previous = {};
try {
  previousText = fs.readFileSync(file, 'utf8');
} catch (err) {
  if (err.code !== 'ENOENT') fail(`cannot read ${file}: ${err.message}`);
}
if (previousText !== undefined) {
  try {
    const parsed = JSON.parse(previousText);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    previous = parsed;
  } catch (err) {
    // Unusable: keep it for the operator to look at and start afresh.
    const aside = `${file}.invalid-${Date.now()}`;
    fs.renameSync(file, aside);
    process.stderr.write(`write-daemon-config: ${file} was unusable (${err.message}); moved to ${aside}\n`);
    previousText = undefined;
    previous = {};
  }
}

// Managed keys first, in a fixed order; the operator's own keys after, as they were.
const next = { ...managed };
for (const [key, value] of Object.entries(previous)) {
  if (!(key in managed)) next[key] = value;
}
const text = `${JSON.stringify(next, null, 2)}\n`;

if (text === previousText) {
  process.stdout.write('unchanged\n');
  process.exit(0);
}

const tmp = `${file}.${process.pid}.tmp`;
const fd = fs.openSync(tmp, 'w', 0o644);
try {
  fs.writeSync(fd, text);
  fs.fsyncSync(fd);
} finally {
  fs.closeSync(fd);
}
fs.renameSync(tmp, file);
const dirFd = fs.openSync(path.dirname(file), 'r');
try {
  fs.fsyncSync(dirFd);
} finally {
  fs.closeSync(dirFd);
}
process.stdout.write('changed\n');
