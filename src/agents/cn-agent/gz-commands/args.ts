/**
 * A getopt-style reading of a mock command's arguments: `-abc` (grouped flags), `-o val` /
 * `-oval`, `--name`, `--name=val` / `--name val`, everything else (and all after `--`)
 * positional. The option table says which take a value.
 */
export interface OptionSpec {
  /** Short letters and long names that take a value, each mapped to the option's key. */
  withValue: Record<string, string>;
  /** Short letters and long names that are flags, each mapped to the option's key. */
  flags: Record<string, string>;
}

export interface ParsedArgs {
  /** Flags: true; valued options: every value given, in order. */
  opts: Map<string, string[] | true>;
  positional: string[];
}

export class UsageError extends Error {}

export function parseArgs(args: readonly string[], spec: OptionSpec): ParsedArgs {
  const opts = new Map<string, string[] | true>();
  const positional: string[] = [];
  const put = (key: string, value: string | true): void => {
    if (value === true) {
      opts.set(key, true);
      return;
    }
    const cur = opts.get(key);
    opts.set(key, Array.isArray(cur) ? [...cur, value] : [value]);
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('--') && arg.length > 2) {
      const eq = arg.indexOf('=');
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      if (spec.withValue[name] !== undefined) {
        const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
        if (value === undefined) throw new UsageError(`option requires an argument -- ${name}`);
        put(spec.withValue[name]!, value);
      } else if (spec.flags[name] !== undefined && eq === -1) {
        put(spec.flags[name]!, true);
      } else {
        throw new UsageError(`unrecognized option '--${name}'`);
      }
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j]!;
        if (spec.withValue[letter] !== undefined) {
          const rest = arg.slice(j + 1);
          const value = rest !== '' ? rest : args[++i];
          if (value === undefined) throw new UsageError(`option requires an argument -- ${letter}`);
          put(spec.withValue[letter]!, value);
          break;
        }
        if (spec.flags[letter] === undefined) throw new UsageError(`illegal option -- ${letter}`);
        put(spec.flags[letter]!, true);
      }
      continue;
    }
    positional.push(arg);
  }
  return { opts, positional };
}

/** The last value of a valued option. */
export function lastValue(p: ParsedArgs, key: string): string | undefined {
  const v = p.opts.get(key);
  return Array.isArray(v) ? v[v.length - 1] : undefined;
}

export function hasFlag(p: ParsedArgs, key: string): boolean {
  return p.opts.get(key) === true;
}
