#!/usr/bin/env node
/*
 * This Source Code Form is subject to the terms of the Mozilla Public
 * License, v. 2.0. If a copy of the MPL was not distributed with this
 * file, You can obtain one at http://mozilla.org/MPL/2.0/.
 */

/*
 * `npm run release`: the self-contained release tarball of a mockcloud zone, as Triton
 * packages its services: `<image>-pkg-<stamp>.tar.gz` holding `root/opt/triton/mockcloud/`, so
 * that extracting it in a zone's path (/zones/<uuid>) installs it, and Triton's image build
 * (buildimage) can lay it onto a base image. The install holds:
 *
 *   dist/src/          the compiled daemon and CLI (no source maps: the sources are not shipped)
 *   node_modules/      production dependencies only (npm ci --omit=dev, no install scripts)
 *   bin/mockcloud      the command (finds a node >= 20: bin/mockcloud-node)
 *   smf/               the SMF manifests and methods
 *   tools/             mockcloud-deploy, nightly-setup-hook
 *   docs/, README.md, package.json, package-lock.json
 *   build/node/        only with --node-dir: a node for the zone (e.g. a SmartOS build)
 *   release.json       name, image name, version, git sha and branch, build time, node
 *
 * The image built from it is named IMAGE_NAME, not `mockcloud`: that name belongs to the
 * original triton-mockcloud's images (node-based agents without these SMF services), and
 * `mockcloud-deploy -i latest|current` must never pick one of those.
 *
 * Options:
 *   --out DIR        where the tarball goes (default dist/release)
 *   --node-dir DIR   a node install to ship as build/node (DIR/bin/node)
 *   --no-build       use dist/ as it is (the caller has just built it)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { create as tarCreate } from 'tar';

export const IMAGE_NAME = 'mockcloud-ts';
export const INSTALL_DIR = 'opt/triton/mockcloud';

const TOP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = ['mockcloud-deploy', 'nightly-setup-hook', 'nightly-setup-hook.mjs'];

function fail(message) {
  process.stderr.write(`release: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = { out: path.join(TOP, 'dist', 'release'), nodeDir: undefined, build: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      return v;
    };
    if (a === '--out') opts.out = path.resolve(value());
    else if (a === '--node-dir') opts.nodeDir = path.resolve(value());
    else if (a === '--no-build') opts.build = false;
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: npm run release [-- --out DIR] [--node-dir DIR] [--no-build]\n');
      process.exit(0);
    } else fail(`unknown option ${a} (see --help)`);
  }
  return opts;
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: TOP, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** Runs a step; its output goes to stderr, so stdout carries only the tarball's path. */
function run(cmd, args, cwd) {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 2, 2] });
}

/** Triton's stamp: <branch>-<UTC time>-g<sha>. */
function stampOf(branch, time, sha) {
  const t = time.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${(branch ?? 'nobranch').replace(/[^A-Za-z0-9._-]/g, '_')}-${t}-g${(sha ?? 'unknown').slice(0, 7)}`;
}

function copy(from, to, filter) {
  fs.cpSync(from, to, { recursive: true, preserveTimestamps: true, ...(filter ? { filter } : {}) });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const pkg = JSON.parse(fs.readFileSync(path.join(TOP, 'package.json'), 'utf8'));
  const builtAt = new Date();
  const sha = git(['rev-parse', 'HEAD']);
  const branch = git(['rev-parse', '--abbrev-ref', 'HEAD']);
  const dirty = (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '';
  const stamp = stampOf(branch, builtAt, sha);

  if (opts.build) run('npm', ['run', 'build', '--silent'], TOP);
  if (!fs.existsSync(path.join(TOP, 'dist/src/cli/main.js'))) fail('dist/src/cli/main.js is missing: build first (npm run build)');
  if (opts.nodeDir && !fs.existsSync(path.join(opts.nodeDir, 'bin', 'node'))) fail(`--node-dir ${opts.nodeDir} has no bin/node`);

  fs.mkdirSync(opts.out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(opts.out, '.stage-'));
  try {
    const install = path.join(stage, 'root', INSTALL_DIR);
    fs.mkdirSync(install, { recursive: true });
    copy(path.join(TOP, 'dist/src'), path.join(install, 'dist/src'), (src) => !src.endsWith('.map'));
    copy(path.join(TOP, 'smf'), path.join(install, 'smf'));
    copy(path.join(TOP, 'docs'), path.join(install, 'docs'));
    copy(path.join(TOP, 'tools/release/bin'), path.join(install, 'bin'));
    fs.mkdirSync(path.join(install, 'tools'));
    for (const t of TOOLS) copy(path.join(TOP, 'tools', t), path.join(install, 'tools', t));
    for (const f of ['README.md', 'package.json', 'package-lock.json']) copy(path.join(TOP, f), path.join(install, f));

    // Production dependencies, exactly as locked. No install scripts: the only one is
    // dtrace-provider's native build, which would target this build host rather than the
    // zone; bunyan and restify run without it (no DTrace probes).
    run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], install);

    let node = { bundled: false, requirement: `${pkg.engines?.node ?? '>=20'}, found by bin/mockcloud-node (/opt/local/bin/node, /usr/node/bin/node, PATH)` };
    if (opts.nodeDir) {
      copy(opts.nodeDir, path.join(install, 'build/node'));
      node = { bundled: true, requirement: `${pkg.engines?.node ?? '>=20'}: build/node/bin/node` };
    }

    const manifest = {
      name: pkg.name,
      image: IMAGE_NAME,
      version: pkg.version,
      git: { sha: sha ?? null, branch: branch ?? null, dirty },
      stamp,
      buildTime: builtAt.toISOString(),
      installDir: `/${INSTALL_DIR}`,
      node,
    };
    fs.writeFileSync(path.join(install, 'release.json'), `${JSON.stringify(manifest, null, 2)}\n`);

    const tarball = path.join(opts.out, `${IMAGE_NAME}-pkg-${stamp}.tar.gz`);
    await tarCreate({ gzip: true, file: tarball, cwd: stage, portable: true }, ['root']);
    const size = fs.statSync(tarball).size;
    process.stdout.write(`${tarball}\n`);
    process.stderr.write(
      `release: ${IMAGE_NAME} ${pkg.version} (${stamp}${dirty ? ', uncommitted changes' : ''}), ${(size / 1048576).toFixed(1)} MiB\n`,
    );
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
}
