#!/usr/bin/env node
/*
 * This Source Code Form is subject to the terms of the Mozilla Public
 * License, v. 2.0. If a copy of the MPL was not distributed with this
 * file, You can obtain one at http://mozilla.org/MPL/2.0/.
 */

/*
 * The nightly CI hook: after a DC is (re)set up, make sure it has COUNT mock CNs and wait until
 * CNAPI shows every one of them running. Run through tools/nightly-setup-hook (which finds a
 * node); plain ESM, no build step, Node >= 18.
 *
 *   1. `mockcloud ensure-servers COUNT` (creates or deletes mock CNs; idempotent), locally or,
 *      with --headnode, in the mockcloud zone through `ssh HOST zlogin ZONE ...`.
 *   2. Poll CNAPI `GET /servers?extras=sysinfo` (directly, or `sdc-cnapi` on the headnode)
 *      until at least COUNT servers of this daemon (sysinfo "Mockcloud Daemon", which
 *      `ensure-servers -j` names; other daemons may register CNs with the same CNAPI) have
 *      status "running", or the timeout passes. A mockcloud that names no daemon: every server
 *      with sysinfo "System Type" "Virtual" counts.
 *
 * Exit 0 with a one-line summary on stdout only then; otherwise exit 1 with the reason on
 * stderr (2 for usage errors). Progress goes to stderr. Safe to run again at any time.
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const PROG = 'nightly-setup-hook';
const PAGE_SIZE = 1000;
const MAX_PAGES = 100;

const USAGE = `Usage: ${PROG} [options] COUNT

Makes sure the DC has COUNT mock CNs (mockcloud ensure-servers) and waits until CNAPI shows
every mock CN ("System Type": "Virtual") running. Exit 0 only then.

Where the DC is (one of):
  --cnapi-url URL        CNAPI base URL                 (env MOCKCLOUD_CNAPI_URL)
  --datacenter DC --dns-domain DOMAIN
                         CNAPI at http://cnapi.DC.DOMAIN (env MOCKCLOUD_DATACENTER_NAME,
                                                          MOCKCLOUD_DNS_DOMAIN)
  --headnode HOST        through 'ssh HOST': sdc-cnapi there, and ensure-servers in the
                         mockcloud zone via zlogin     (env MOCKCLOUD_HEADNODE)
Options:
  --count N              same as COUNT                  (env MOCKCLOUD_NUM_SERVERS)
  --vmapi-url URL, --napi-url URL
                         passed to mockcloud as MOCKCLOUD_VMAPI_URL / MOCKCLOUD_NAPI_URL
  --data-dir DIR         the mockcloud data dir          (env MOCKCLOUD_DATA_DIR)
  --mockcloud CMD        the mockcloud command (default: mockcloud)
  --zone-alias ALIAS     the mockcloud zone, with --headnode (default: mockcloud0)
  --timeout SECONDS      give up after this long (default 900)
  --interval SECONDS     between CNAPI polls (default 5)
  -h, --help             this help
`;

class UsageError extends Error {}

function parseCommandLine(argv, rawEnv) {
  // An empty variable counts as unset.
  const env = Object.fromEntries(Object.entries(rawEnv).filter(([, v]) => v !== undefined && v !== ''));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      count: { type: 'string' },
      'cnapi-url': { type: 'string' },
      'vmapi-url': { type: 'string' },
      'napi-url': { type: 'string' },
      datacenter: { type: 'string' },
      'dns-domain': { type: 'string' },
      headnode: { type: 'string' },
      'data-dir': { type: 'string' },
      mockcloud: { type: 'string' },
      'zone-alias': { type: 'string' },
      timeout: { type: 'string' },
      interval: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { help: true };
  if (positionals.length > 1) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(' ')}`);

  const countText = positionals[0] ?? values.count ?? env.MOCKCLOUD_NUM_SERVERS;
  if (countText === undefined) throw new UsageError('COUNT is required');
  if (!/^\d+$/.test(countText)) throw new UsageError(`COUNT is not a whole number: ${JSON.stringify(countText)}`);

  const seconds = (name, text, dflt) => {
    if (text === undefined) return dflt;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of seconds`);
    return n;
  };

  const headnode = values.headnode ?? env.MOCKCLOUD_HEADNODE;
  let cnapiUrl = values['cnapi-url'] ?? env.MOCKCLOUD_CNAPI_URL;
  const dc = values.datacenter ?? env.MOCKCLOUD_DATACENTER_NAME;
  const domain = values['dns-domain'] ?? env.MOCKCLOUD_DNS_DOMAIN;
  if (!cnapiUrl && dc && domain) cnapiUrl = `http://cnapi.${dc}.${domain}`;
  if (!cnapiUrl && !headnode) {
    throw new UsageError('say where CNAPI is: --cnapi-url, --datacenter with --dns-domain, or --headnode');
  }
  if (cnapiUrl) {
    let u;
    try {
      u = new URL(cnapiUrl);
    } catch {
      throw new UsageError(`--cnapi-url is not a URL: ${JSON.stringify(cnapiUrl)}`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError('--cnapi-url must be http(s)');
    cnapiUrl = cnapiUrl.replace(/\/+$/, '');
  }

  return {
    help: false,
    count: Number(countText),
    cnapiUrl,
    vmapiUrl: values['vmapi-url'] ?? env.MOCKCLOUD_VMAPI_URL,
    napiUrl: values['napi-url'] ?? env.MOCKCLOUD_NAPI_URL,
    headnode,
    dataDir: values['data-dir'] ?? env.MOCKCLOUD_DATA_DIR,
    mockcloud: values.mockcloud ?? env.MOCKCLOUD_CMD ?? 'mockcloud',
    zoneAlias: values['zone-alias'] ?? 'mockcloud0',
    timeoutMs: seconds('timeout', values.timeout, 900) * 1000,
    intervalMs: seconds('interval', values.interval, 5) * 1000,
  };
}

/** POSIX shell quoting, for commands run through ssh. */
function shq(s) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs a command; resolves with its stdout, rejects with its stderr. `passOutput` sends the
 * child's stdout and stderr to our stderr instead; `passStderr` only its stderr (progress of
 * ensure-servers), its stdout (the -j answer) is still returned.
 */
function runCommand(cmd, args, { env = process.env, passOutput = false, passStderr = false, timeoutMs } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', passOutput ? 2 : 'pipe', passOutput || passStderr ? 2 : 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (d) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d) => (err += d));
    const timer = timeoutMs ? setTimeout(() => child.kill('SIGTERM'), timeoutMs) : undefined;
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${cmd}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else {
        const why = signal ? `killed by ${signal}` : `exit status ${code}`;
        const detail = err.trim().split('\n').slice(-3).join(' | ');
        reject(new Error(`${[cmd, ...args].join(' ')}: ${why}${detail ? `: ${detail}` : ''}`));
      }
    });
  });
}

function ssh(opts, remoteArgs, extra = {}) {
  return runCommand('ssh', ['-o', 'BatchMode=yes', opts.headnode, remoteArgs.map(shq).join(' ')], extra);
}

/**
 * `mockcloud ensure-servers COUNT -j`; resolves with the daemon its CNs name in sysinfo
 * "Mockcloud Daemon" (undefined from a mockcloud that does not say).
 */
async function ensureServers(opts) {
  let out;
  if (opts.headnode) {
    const zone = (await ssh(opts, ['vmadm', 'lookup', '-1', `alias=${opts.zoneAlias}`])).trim();
    if (!/^[0-9a-f-]{36}$/.test(zone)) throw new Error(`no zone with alias ${opts.zoneAlias} on ${opts.headnode}`);
    const inner = [opts.mockcloud, 'ensure-servers', String(opts.count), '-j'];
    if (opts.dataDir) inner.push('--data-dir', opts.dataDir);
    // A login shell, so the zone's profile puts mockcloud on PATH.
    out = await ssh(opts, ['zlogin', zone, '/bin/bash', '-lc', inner.map(shq).join(' ')], {
      passStderr: true,
      timeoutMs: opts.timeoutMs,
    });
  } else {
    const args = ['ensure-servers', String(opts.count), '-j'];
    if (opts.dataDir) args.push('--data-dir', opts.dataDir);
    const env = { ...process.env };
    if (opts.cnapiUrl) env.MOCKCLOUD_CNAPI_URL = opts.cnapiUrl;
    if (opts.vmapiUrl) env.MOCKCLOUD_VMAPI_URL = opts.vmapiUrl;
    if (opts.napiUrl) env.MOCKCLOUD_NAPI_URL = opts.napiUrl;
    out = await runCommand(opts.mockcloud, args, { env, passStderr: true, timeoutMs: opts.timeoutMs });
  }
  try {
    const daemon = JSON.parse(out).daemon;
    return typeof daemon === 'string' && daemon ? daemon : undefined;
  } catch {
    return undefined;
  }
}

/** The body of an sdc-cnapi answer (status line, headers, blank line, JSON). */
function sdcToolBody(text) {
  const m = /^HTTP\/\d(?:\.\d)? (\d{3})[^\n]*\n/.exec(text);
  if (!m) return JSON.parse(text);
  const split = text.search(/\r?\n\r?\n/);
  const body = split < 0 ? '' : text.slice(split).trim();
  if (m[1] !== '200') throw new Error(`CNAPI answered ${m[1]}: ${body.slice(0, 200)}`);
  return JSON.parse(body);
}

/** One page of CNAPI's server list. */
async function listServersPage(opts, offset) {
  const query = `/servers?extras=sysinfo&limit=${PAGE_SIZE}&offset=${offset}`;
  if (opts.headnode) {
    return sdcToolBody(await ssh(opts, ['sdc-cnapi', query], { timeoutMs: 60_000 }));
  }
  const res = await fetch(`${opts.cnapiUrl}${query}`, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`CNAPI answered ${res.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

async function listServers(opts) {
  const all = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const servers = await listServersPage(opts, page * PAGE_SIZE);
    if (!Array.isArray(servers)) throw new Error('CNAPI GET /servers did not answer an array');
    all.push(...servers);
    if (servers.length < PAGE_SIZE) return all;
  }
  throw new Error(`CNAPI lists more than ${MAX_PAGES * PAGE_SIZE} servers`);
}

/** The daemon id of a "Mockcloud Daemon" value ("<id>@<host>"). */
const daemonIdOf = (v) => (typeof v === 'string' ? v.split('@')[0] : undefined);

/** This daemon's mock CNs (all mock CNs when it names no daemon), and how many run. */
function mockCnCensus(servers, daemon) {
  const ours = daemon
    ? (s) => daemonIdOf(s.sysinfo['Mockcloud Daemon']) === daemonIdOf(daemon)
    : (s) => s.sysinfo['System Type'] === 'Virtual';
  const mock = servers.filter((s) => s && s.sysinfo && ours(s));
  const notRunning = mock.filter((s) => s.status !== 'running');
  return { mock: mock.length, running: mock.length - notRunning.length, notRunning };
}

function describeNotRunning(notRunning) {
  const shown = notRunning.slice(0, 5).map((s) => `${s.uuid} (${s.status ?? 'no status'})`);
  if (notRunning.length > shown.length) shown.push(`and ${notRunning.length - shown.length} more`);
  return shown.join(', ');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  let opts;
  try {
    opts = parseCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${PROG}: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }

  const started = Date.now();
  const where = opts.headnode ? `headnode ${opts.headnode}` : opts.cnapiUrl;
  const progress = (msg) => process.stderr.write(`${PROG}: ${msg}\n`);

  progress(`ensuring ${opts.count} mock CNs`);
  let daemon;
  try {
    daemon = await ensureServers(opts);
  } catch (err) {
    process.stderr.write(`${PROG}: FAILED: mockcloud ensure-servers ${opts.count}: ${err.message}\n`);
    return 1;
  }

  progress(
    `waiting up to ${opts.timeoutMs / 1000}s for ${opts.count} mock CNs${daemon ? ` of daemon ${daemon}` : ''} running in CNAPI (${where})`,
  );
  const deadline = started + opts.timeoutMs;
  let last = '';
  let lastShown = 0;
  let reason = 'no answer from CNAPI yet';
  for (;;) {
    try {
      const c = mockCnCensus(await listServers(opts), daemon);
      if (c.mock >= opts.count && c.notRunning.length === 0) {
        const secs = Math.round((Date.now() - started) / 1000);
        process.stdout.write(
          `${PROG}: OK: ${c.running} mock CNs running in CNAPI (wanted ${opts.count}) after ${secs}s\n`,
        );
        return 0;
      }
      reason =
        c.mock < opts.count
          ? `CNAPI shows ${c.mock} of ${opts.count} mock CNs (${c.running} running)`
          : `${c.notRunning.length} of ${c.mock} mock CNs not running: ${describeNotRunning(c.notRunning)}`;
    } catch (err) {
      reason = `cannot list servers in CNAPI (${where}): ${err.cause?.message ?? err.message}`;
    }
    // Progress when something changed, and at least every 30 s.
    if (reason !== last || Date.now() - lastShown >= 30_000) {
      progress(`waiting: ${reason}`);
      last = reason;
      lastShown = Date.now();
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    await sleep(Math.min(opts.intervalMs, remaining));
  }
  process.stderr.write(`${PROG}: FAILED: timed out after ${opts.timeoutMs / 1000}s: ${reason}\n`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${PROG}: FAILED: ${err.stack ?? err}\n`);
    process.exit(1);
  },
);
