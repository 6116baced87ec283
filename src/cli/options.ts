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
  return y.option('json', { alias: 'j', type: 'boolean', describe: `print ${what} as JSON` }) as Argv<T & JsonArgs>;
}

/** A whole number in [min, max] from a positional or flag, or a CliError-worthy message. */
export function checkCount(name: string, value: unknown, min: number, max: number): string | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    return `${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`;
  }
  return undefined;
}

/**
 * One progress line: rewritten in place on a terminal; elsewhere (logs, CI) at most one line a
 * second plus the last one, so a long run stays readable.
 */
export class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private shown = false;
  private pending: string | undefined;
  private lastWrite = 0;

  update(line: string): void {
    if (this.tty) {
      this.shown = true;
      process.stderr.write(`\r${line}\x1b[K`);
      return;
    }
    this.pending = line;
    if (Date.now() - this.lastWrite >= 1000) this.flush();
  }

  done(): void {
    if (this.tty && this.shown) process.stderr.write('\n');
    if (!this.tty) this.flush();
    this.shown = false;
  }

  private flush(): void {
    if (this.pending === undefined) return;
    process.stderr.write(`${this.pending}\n`);
    this.pending = undefined;
    this.lastWrite = Date.now();
  }
}
