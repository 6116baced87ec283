#!/usr/bin/env node
/*
 * This Source Code Form is subject to the terms of the Mozilla Public
 * License, v. 2.0. If a copy of the MPL was not distributed with this
 * file, You can obtain one at http://mozilla.org/MPL/2.0/.
 */

/*
 * Part of `npm run build`: dist/build-info.json, the commit and time of this build, for
 * `mockcloud --version`, `mockcloud status` and the mockcloud_build_info metric
 * (src/daemon/version.ts). A release carries the same in release.json (tools/release.mjs).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TOP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function git(args) {
  try {
    return execFileSync('git', args, { cwd: TOP, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

const info = {
  gitSha: git(['rev-parse', 'HEAD']) ?? null,
  dirty: (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
  buildTime: new Date().toISOString(),
};
fs.mkdirSync(path.join(TOP, 'dist'), { recursive: true });
fs.writeFileSync(path.join(TOP, 'dist', 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
