/** Options several commands share, so their --help reads the same everywhere. */
import type { Argv } from 'yargs';

export interface DataDirArgs {
  'data-dir'?: string;
}

export function withDataDir<T>(y: Argv<T>): Argv<T & DataDirArgs> {
  return y.option('data-dir', {
    type: 'string',
    describe:
      "the daemon's data dir (env MOCKCLOUD_DATA_DIR; default: where this user's daemon runs or last ran, " +
      'else /data/mockcloud when it exists, else ~/.mockcloud)',
  }) as Argv<T & DataDirArgs>;
}

export interface JsonArgs {
  json?: boolean;
}

export function withJson<T>(y: Argv<T>, what: string): Argv<T & JsonArgs> {
  return y.option('json', { alias: 'j', type: 'boolean', describe: `print ${what} as JSON, on one line` }) as Argv<T & JsonArgs>;
}

/**
 * `-j` of a command answering one object: that object on one line, as node-triton's `get`
 * commands print it, so every `-j` output is one JSON object per line (`| json -ga`).
 */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** A whole number in [min, max] from a positional or flag, or a UsageError-worthy message. */
export function checkCount(name: string, value: unknown, min: number, max: number): string | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    return `${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`;
  }
  return undefined;
}

/** Progress bars and lines: src/cli/progress.ts. */
export { Progress } from './progress.js';
