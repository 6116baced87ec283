/**
 * Dockerfile instructions as the build steps handle them (sdc-docker-build lib/build.js and
 * lib/shellparser.js): the instruction record, its arguments in the shapes docker-file-parser
 * gives them, the text of `Step N/M : ...`, and variable substitution.
 */
import type { CommandEntry } from 'docker-file-parser';

const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** One instruction: docker-file-parser's entry plus what the build learns about it. */
export interface BuildCmd {
  name: string;
  args: string | string[] | Record<string, string>;
  raw: string;
  lineno?: number;
  ctx: { isCached?: boolean; copyHash?: string };
}

export function toCmd(c: CommandEntry): BuildCmd {
  return { name: c.name, args: c.args, raw: c.raw, lineno: c.lineno, ctx: {} };
}

export function asArray(cmd: BuildCmd): string[] {
  if (Array.isArray(cmd.args)) return cmd.args;
  if (typeof cmd.args === 'string') return cmd.args.split(/\s+/).filter(Boolean);
  throw new Error(`${cmd.name} argument should be an array`);
}

export function asObject(cmd: BuildCmd): Record<string, string> {
  if (cmd.args && typeof cmd.args === 'object' && !Array.isArray(cmd.args)) return cmd.args;
  throw new Error(`${cmd.name} argument should be an object`);
}

/** What `Step N/M : ` shows: array args joined, ENV/LABEL maps as `k=v` pairs. */
export function commandString(cmd: BuildCmd): string {
  const a = cmd.args;
  let s: string;
  if (Array.isArray(a)) s = a.join(' ');
  else if (a && typeof a === 'object') {
    s = Object.entries(a)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
  } else s = String(a);
  return `${cmd.name} ${s}`;
}

export function parseJson(v: unknown, fallback: object): unknown {
  if (typeof v !== 'string' || !v) return structuredClone(fallback);
  const parsed: unknown = JSON.parse(v);
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : structuredClone(fallback);
}

/** The env a step sees: the image's, a default PATH, and the build ARGs the env lacks. */
export function mergedEnv(env: string[], args: Record<string, string | null>): string[] {
  const out = env.slice();
  if (!out.some((e) => e.startsWith('PATH='))) out.push(DEFAULT_PATH);
  for (const [k, v] of Object.entries(args)) {
    const exists = out.some((e) => e === k || e.startsWith(`${k}=`));
    if (!exists) out.push(v !== null ? `${k}=${v}` : k);
  }
  return out;
}

/**
 * sdc-docker-build lib/shellparser.js processWord: quotes removed, `\` escapes, `$VAR`,
 * `${VAR}`, `${VAR:-word}` and `${VAR:+word}` from `env` (`KEY=value` entries).
 */
export function processWord(word: string, envList: string[]): string {
  const env = new Map<string, string>();
  for (const e of envList) {
    const i = e.indexOf('=');
    if (i > 0) env.set(e.slice(0, i), e.slice(i + 1));
  }
  let out = '';
  let i = 0;
  const dollar = (): string => {
    i++; // '$'
    if (word[i] === '{') {
      const end = word.indexOf('}', i);
      if (end < 0) return '${';
      const inner = word.slice(i + 1, end);
      i = end + 1;
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-+])(.*))?$/s.exec(inner);
      if (!m) return '';
      const v = env.get(m[1]!);
      if (m[2] === '-') return v ? v : processWord(m[3] ?? '', envList);
      if (m[2] === '+') return v ? processWord(m[3] ?? '', envList) : '';
      return v ?? '';
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(word.slice(i));
    if (!m) return '$';
    i += m[0].length;
    return env.get(m[0]) ?? '';
  };
  while (i < word.length) {
    const c = word[i]!;
    if (c === "'") {
      const end = word.indexOf("'", i + 1);
      out += word.slice(i + 1, end < 0 ? word.length : end);
      i = end < 0 ? word.length : end + 1;
    } else if (c === '"') {
      i++;
      while (i < word.length && word[i] !== '"') {
        if (word[i] === '$') out += dollar();
        else if (word[i] === '\\' && i + 1 < word.length) {
          out += word[i + 1];
          i += 2;
        } else out += word[i++];
      }
      i++;
    } else if (c === '$') {
      out += dollar();
    } else if (c === '\\' && i + 1 < word.length) {
      out += word[i + 1];
      i += 2;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}
