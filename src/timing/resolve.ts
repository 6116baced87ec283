/** `--timing NAME|FILE` and the like: a built-in profile's name, or a timing file. */
import path from 'node:path';
import { BUILTIN_PROFILES } from './builtin.js';
import { loadTimingFile, TimingFileError } from './file.js';
import type { TimingProfile } from './profile.js';

/**
 * The profile `spec` names: a built-in one, else the timing file at that path (relative to
 * `baseDir`). Throws TimingFileError with the file's problems at their lines.
 */
export async function resolveTiming(spec: string, baseDir = process.cwd()): Promise<TimingProfile> {
  const builtin = BUILTIN_PROFILES.get(spec);
  if (builtin) return builtin;
  if (!/[/\\.]/.test(spec)) {
    throw new TimingFileError(`timing ${JSON.stringify(spec)} is no built-in profile (${[...BUILTIN_PROFILES.keys()].join(', ')}) and no file path`);
  }
  return loadTimingFile(path.resolve(baseDir, spec), BUILTIN_PROFILES);
}
