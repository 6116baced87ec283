/** mockcloud's own version, from package.json (found from both src/ under vitest and dist/src/). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'mockcloud' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not here; look one level up
    }
    dir = path.dirname(dir);
  }
  return '0.0.0';
}

export const MOCKCLOUD_VERSION = findVersion();
