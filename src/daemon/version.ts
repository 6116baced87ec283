/**
 * mockcloud's own version, from package.json (found from both src/ under vitest and dist/src/),
 * and what build it is: the git commit and build time, from the install's release.json (a
 * release, tools/release.mjs) or dist/build-info.json (written by `npm run build` in a checkout).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  version: string;
  /** The commit it was built from; null when unknown (a build outside git). */
  gitSha: string | null;
  /** When it was built, ISO 8601 UTC; null when unknown. */
  buildTime: string | null;
}

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

function findBuild(): BuildInfo {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const pkg = readJson(path.join(dir, 'package.json'));
    if (pkg?.name === 'mockcloud' && typeof pkg.version === 'string') {
      const release = readJson(path.join(dir, 'release.json'));
      if (release) {
        return { version: pkg.version, gitSha: str((release.git as Record<string, unknown> | undefined)?.sha), buildTime: str(release.buildTime) };
      }
      const built = readJson(path.join(dir, 'dist', 'build-info.json'));
      return { version: pkg.version, gitSha: str(built?.gitSha), buildTime: str(built?.buildTime) };
    }
    dir = path.dirname(dir);
  }
  return { version: '0.0.0', gitSha: null, buildTime: null };
}

export const BUILD: BuildInfo = findBuild();
export const MOCKCLOUD_VERSION = BUILD.version;

/** What `mockcloud --version` and `mockcloud version` print. */
export function versionLine(): string {
  return `mockcloud ${BUILD.version} (git ${BUILD.gitSha ?? 'unknown'}, built ${BUILD.buildTime ?? 'unknown'})`;
}
