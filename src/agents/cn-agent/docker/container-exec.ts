/**
 * Running a command "inside" a mock container, for docker_exec. A real CN runs
 * `zlogin <uuid> /usr/vm/sbin/dockerexec <Cmd...>`: dockerexec (smartos-live
 * src/dockerinit/src/dockerexec.c) looks the command up in the container's PATH, and on failure
 * prints `<timestamp> FATAL (code: N): <why>` and exits N; cn-agent forwards that line to the
 * client as stderr. Otherwise the command itself runs.
 *
 * A mock container has no binaries: a small set of commands a test would use works against the
 * container's model (container-fs.ts): echo, cat, hostname, uname, pwd, ls, env/printenv, id,
 * whoami, true, false, sleep, and `sh`/`bash -c` with simple command lists (`;`, `&&`, `||`,
 * `$VAR`, quotes, `exit`, `cd`, `export`). Any other command fails as a missing one does.
 */
import path from 'node:path';
import type { Vm } from '../../../vmadm/types.js';
import { abortableSleep } from '../abortable.js';
import { normalizeContainerPath, type ContainerFs } from './container-fs.js';

/** dockerexec's exit codes (smartos-live src/dockerinit/src/docker-common.h dockerinit_err_t). */
export const DOCKEREXEC = { NOT_FOUND: 17, STAT_CMD: 25, STAT_DIR: 26, STAT_EXEC: 27, NO_COMMAND: 13 } as const;

const SEARCH_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const DEFAULT_PATH = SEARCH_PATH.join(':');

export interface ExecIo {
  stdout(chunk: string): void;
  stderr(chunk: string): void;
  /** The next stdin chunk, or null once stdin is closed. */
  readStdin(): Promise<string | null>;
}

/** stdin fed by the client's frames. */
export class StdinQueue {
  private readonly chunks: string[] = [];
  private closed = false;
  private waiter: ((v: string | null) => void) | undefined;

  push(data: string): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(data);
    } else this.chunks.push(data);
  }

  end(): void {
    this.closed = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(null);
    }
  }

  read(): Promise<string | null> {
    const next = this.chunks.shift();
    if (next !== undefined) return Promise.resolve(next);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => (this.waiter = resolve));
  }
}

export interface ExecContext {
  fs: ContainerFs;
  vm: Vm;
  /** The CN's platform (`Live Image`), for `uname` in a SmartOS zone. */
  platform: string;
  io: ExecIo;
  signal: AbortSignal;
}

/** The environment dockerexec sets up: `docker:env` plus a PATH and HOME. */
export function containerEnv(vm: Vm): Map<string, string> {
  const env = new Map<string, string>();
  const raw = vm.internal_metadata?.['docker:env'];
  let list: unknown = [];
  if (typeof raw === 'string') {
    try {
      list = JSON.parse(raw);
    } catch {
      list = [];
    }
  }
  if (Array.isArray(list)) {
    for (const e of list) {
      if (typeof e !== 'string') continue;
      const i = e.indexOf('=');
      if (i > 0) env.set(e.slice(0, i), e.slice(i + 1));
    }
  }
  if (!env.has('PATH')) env.set('PATH', DEFAULT_PATH);
  if (!env.has('HOME')) env.set('HOME', '/root');
  env.set('HOSTNAME', typeof vm.hostname === 'string' && vm.hostname ? vm.hostname : vm.uuid);
  return env;
}

export function containerWorkdir(vm: Vm): string {
  const w = vm.internal_metadata?.['docker:workdir'];
  return typeof w === 'string' && w.startsWith('/') ? w : '/';
}

function timestamp(): string {
  return new Date().toISOString();
}

type Builtin = (args: string[], st: ShellState, ctx: ExecContext) => Promise<number>;

interface ShellState {
  env: Map<string, string>;
  cwd: string;
  /** `exit` in a script: stop there with this status. */
  exited?: number;
}

/**
 * dockerexec then the command: the exit status the client sees. Lookup failures are written
 * as dockerexec's FATAL line on stderr.
 */
export async function dockerExec(argv: string[], ctx: ExecContext): Promise<number> {
  const st: ShellState = { env: containerEnv(ctx.vm), cwd: containerWorkdir(ctx.vm) };
  const fatal = (code: number, msg: string): number => {
    ctx.io.stderr(`${timestamp()} FATAL (code: ${code}): ${msg}\r\n`);
    return code;
  };
  const cmd = argv[0];
  if (cmd === undefined || cmd === '') return fatal(DOCKEREXEC.NO_COMMAND, `no command specified on cmdline, argc: ${argv.length + 1}`);
  const found = resolveCommand(cmd, st, ctx);
  if ('fatal' in found) return fatal(found.fatal, found.message);
  return found.run(argv.slice(1), st, ctx);
}

type Resolved = { run: Builtin } | { fatal: number; message: string };

function resolveCommand(cmd: string, st: ShellState, ctx: ExecContext): Resolved {
  if (cmd.includes('/')) {
    const abs = normalizeContainerPath(path.posix.isAbsolute(cmd) ? cmd : path.posix.join(st.cwd, cmd));
    const name = path.posix.basename(abs);
    if (SEARCH_PATH.includes(path.posix.dirname(abs)) && BUILTINS[name]) return { run: BUILTINS[name]! };
    const n = ctx.fs.lookup(abs);
    if ('error' in n) return { fatal: DOCKEREXEC.STAT_CMD, message: `stat(${cmd}): ${n.error === 'ENOENT' ? 'No such file or directory' : 'Not a directory'}` };
    if (n.node.type === 'dir') return { fatal: DOCKEREXEC.STAT_DIR, message: `stat(${cmd}): is a directory` };
    return { fatal: DOCKEREXEC.STAT_EXEC, message: `stat(${cmd}): is not executable` };
  }
  const builtin = BUILTINS[cmd];
  if (builtin) return { run: builtin };
  return { fatal: DOCKEREXEC.NOT_FOUND, message: `'${cmd}' not found in PATH` };
}

function resolvePath(st: ShellState, p: string): string {
  return normalizeContainerPath(path.posix.isAbsolute(p) ? p : path.posix.join(st.cwd, p));
}

function unameOf(vm: Vm, platform: string, host: string, flags: Set<string>): string {
  const linux = vm.brand === 'lx';
  const f = {
    s: linux ? 'Linux' : 'SunOS',
    n: host,
    r: linux ? (typeof vm.kernel_version === 'string' ? vm.kernel_version : '3.13.0') : '5.11',
    v: linux ? 'BrandZ virtual linux' : `joyent_${platform}`,
    m: linux ? 'x86_64' : 'i86pc',
    p: linux ? 'unknown' : 'i386',
    i: linux ? 'unknown' : 'i86pc',
    o: linux ? 'GNU/Linux' : 'illumos',
  };
  if (flags.has('a')) {
    return linux ? [f.s, f.n, f.r, f.v, f.m, f.o].join(' ') : [f.s, f.n, f.r, f.v, f.m, f.p, f.i].join(' ');
  }
  const order: (keyof typeof f)[] = ['s', 'n', 'r', 'v', 'm', 'p', 'i', 'o'];
  const picked = order.filter((k) => flags.has(k));
  return (picked.length ? picked : ['s' as const]).map((k) => f[k]).join(' ');
}

const BUILTINS: Record<string, Builtin> = {
  async true() {
    return 0;
  },
  async false() {
    return 1;
  },
  async echo(args, _st, ctx) {
    let newline = true;
    if (args[0] === '-n') {
      newline = false;
      args = args.slice(1);
    }
    ctx.io.stdout(args.join(' ') + (newline ? '\n' : ''));
    return 0;
  },
  async hostname(_args, _st, ctx) {
    ctx.io.stdout(`${ctx.fs.hostname}\n`);
    return 0;
  },
  async uname(args, _st, ctx) {
    const flags = new Set<string>();
    for (const a of args) {
      if (!/^-[asnrvmpio]+$/.test(a)) {
        ctx.io.stderr(`uname: invalid option -- '${a.replace(/^-+/, '').slice(0, 1)}'\n`);
        return 1;
      }
      for (const c of a.slice(1)) flags.add(c);
    }
    ctx.io.stdout(`${unameOf(ctx.vm, ctx.platform, ctx.fs.hostname, flags)}\n`);
    return 0;
  },
  async pwd(_args, st, ctx) {
    ctx.io.stdout(`${st.cwd}\n`);
    return 0;
  },
  async id(_args, _st, ctx) {
    ctx.io.stdout('uid=0(root) gid=0(root) groups=0(root)\n');
    return 0;
  },
  async whoami(_args, _st, ctx) {
    ctx.io.stdout('root\n');
    return 0;
  },
  async env(args, st, ctx) {
    if (args.length > 0) {
      ctx.io.stderr(`env: '${args[0]}': No such file or directory\n`);
      return 127;
    }
    ctx.io.stdout([...st.env].map(([k, v]) => `${k}=${v}\n`).join(''));
    return 0;
  },
  async printenv(args, st, ctx) {
    if (args.length === 0) return BUILTINS.env!([], st, ctx);
    let status = 0;
    for (const a of args) {
      const v = st.env.get(a);
      if (v === undefined) status = 1;
      else ctx.io.stdout(`${v}\n`);
    }
    return status;
  },
  async cat(args, st, ctx) {
    if (args.length === 0 || (args.length === 1 && args[0] === '-')) {
      for (;;) {
        const chunk = await ctx.io.readStdin();
        if (chunk === null) return 0;
        ctx.io.stdout(chunk);
      }
    }
    let status = 0;
    for (const a of args) {
      const found = ctx.fs.lookup(resolvePath(st, a));
      if ('error' in found) {
        ctx.io.stderr(`cat: ${a}: ${found.error === 'ENOENT' ? 'No such file or directory' : 'Not a directory'}\n`);
        status = 1;
      } else if (found.node.type === 'dir') {
        ctx.io.stderr(`cat: read error: Is a directory\n`);
        status = 1;
      } else if (found.node.type === 'file') {
        ctx.io.stdout(found.node.content.toString('utf8'));
      }
    }
    return status;
  },
  async ls(args, st, ctx) {
    const all = args.includes('-a');
    const paths = args.filter((a) => !a.startsWith('-'));
    let status = 0;
    for (const p of paths.length ? paths : ['.']) {
      const found = ctx.fs.lookup(resolvePath(st, p));
      if ('error' in found) {
        ctx.io.stderr(`ls: ${p}: No such file or directory\n`);
        status = 1;
        continue;
      }
      if (paths.length > 1 && found.node.type === 'dir') ctx.io.stdout(`${p}:\n`);
      const names = found.node.type === 'dir' ? ctx.fs.children(resolvePath(st, p)) : [p];
      const shown = all && found.node.type === 'dir' ? ['.', '..', ...names] : names.filter((n) => !n.startsWith('.'));
      ctx.io.stdout(shown.map((n) => `${n}\n`).join(''));
    }
    return status;
  },
  async sleep(args, _st, ctx) {
    const secs = Number(args[0]);
    if (args.length !== 1 || !Number.isFinite(secs) || secs < 0) {
      ctx.io.stderr(`sleep: invalid time interval '${args[0] ?? ''}'\n`);
      return 1;
    }
    await abortableSleep(secs * 1000, ctx.signal);
    return 0;
  },
  sh: shell('sh'),
  bash: shell('bash'),
};

function shell(name: string): Builtin {
  return async (args, st, ctx) => {
    if (args[0] !== '-c' || args.length < 2) {
      // An interactive shell reads commands from stdin.
      if (args.length === 0) {
        let script = '';
        for (;;) {
          const chunk = await ctx.io.readStdin();
          if (chunk === null) break;
          script += chunk;
        }
        return runScript(name, script, st, ctx);
      }
      ctx.io.stderr(`${name}: ${args[0]}: No such file or directory\n`);
      return 127;
    }
    return runScript(name, args[1]!, { env: new Map(st.env), cwd: st.cwd }, ctx);
  };
}

/**
 * Split a command list at `;`, newlines, `&&` and `||` outside quotes; each part keeps the
 * operator that follows it. Pipes, redirections and subshells are refused.
 */
function splitList(script: string): { text: string; op: ';' | '&&' | '||' }[] | { unsupported: string } {
  const out: { text: string; op: ';' | '&&' | '||' }[] = [];
  let start = 0;
  let quote = '';
  for (let i = 0; i < script.length; i++) {
    const c = script[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '\\') {
      i++;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(script[i - 1]!))) {
      const nl = script.indexOf('\n', i);
      out.push({ text: script.slice(start, i), op: ';' });
      i = nl < 0 ? script.length : nl;
      start = i + 1;
    } else if (c === ';' || c === '\n') {
      out.push({ text: script.slice(start, i), op: ';' });
      start = i + 1;
    } else if (script.startsWith('&&', i) || script.startsWith('||', i)) {
      out.push({ text: script.slice(start, i), op: script.slice(i, i + 2) as '&&' | '||' });
      start = i + 2;
      i++;
    } else if ('|&<>`()'.includes(c)) {
      return { unsupported: c };
    }
  }
  if (quote) return { unsupported: 'unterminated quote' };
  out.push({ text: script.slice(start), op: ';' });
  return out;
}

/** One simple command's words: quotes removed, `$VAR`, `${VAR}` and `$?` expanded. */
function words(text: string, env: Map<string, string>, status: number): string[] {
  const out: string[] = [];
  let word = '';
  let inWord = false;
  const expand = (i: number): [string, number] => {
    if (text[i + 1] === '?') return [String(status), i + 2];
    if (text[i + 1] === '{') {
      const end = text.indexOf('}', i + 2);
      if (end < 0) return ['$', i + 1];
      return [env.get(text.slice(i + 2, end)) ?? '', end + 1];
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1));
    if (!m) return ['$', i + 1];
    return [env.get(m[0]) ?? '', i + 1 + m[0].length];
  };
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      word += text[i + 1];
      inWord = true;
      i += 2;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      inWord = true;
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && '"\\$'.includes(text[i + 1] ?? '')) {
          word += text[i + 1];
          i += 2;
        } else if (text[i] === '$') {
          const [v, next] = expand(i);
          word += v;
          i = next;
        } else word += text[i++];
      }
      i++;
    } else if (c === '$') {
      const [v, next] = expand(i);
      word += v;
      inWord = true;
      i = next;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(word);
      word = '';
      inWord = false;
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) out.push(word);
  return out;
}

async function runScript(name: string, script: string, st: ShellState, ctx: ExecContext): Promise<number> {
  const list = splitList(script);
  if ('unsupported' in list) {
    ctx.io.stderr(`${name}: '${list.unsupported}' is not supported by a mock CN's shell\n`);
    return 2;
  }
  let status = 0;
  let skip = false;
  for (const part of list) {
    const w = words(part.text, st.env, status);
    if (!skip && w.length > 0) status = await runShellCommand(name, w, st, ctx);
    if (st.exited !== undefined) return st.exited;
    if (w.length > 0 || part.op !== ';') skip = (part.op === '&&' && status !== 0) || (part.op === '||' && status === 0);
  }
  return status;
}

async function runShellCommand(name: string, words: string[], st: ShellState, ctx: ExecContext): Promise<number> {
  const assign = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;
  while (words.length > 0 && assign.test(words[0]!)) {
    const m = assign.exec(words.shift()!)!;
    st.env.set(m[1]!, m[2]!);
  }
  if (words.length === 0) return 0;
  const [cmd, ...args] = words;
  if (cmd === 'exit') {
    st.exited = args[0] === undefined ? 0 : Number.parseInt(args[0], 10) & 0xff;
    return st.exited;
  }
  if (cmd === 'export') {
    for (const a of args) {
      const m = assign.exec(a);
      if (m) st.env.set(m[1]!, m[2]!);
    }
    return 0;
  }
  if (cmd === 'cd') {
    const to = resolvePath(st, args[0] ?? st.env.get('HOME') ?? '/');
    const found = ctx.fs.lookup(to);
    if ('error' in found || found.node.type !== 'dir') {
      ctx.io.stderr(`${name}: cd: can't cd to ${args[0] ?? ''}\n`);
      return 2;
    }
    st.cwd = to;
    return 0;
  }
  const found = resolveCommand(cmd!, st, ctx);
  if ('fatal' in found) {
    ctx.io.stderr(`${name}: ${cmd}: not found\n`);
    return 127;
  }
  return found.run(args, st, ctx);
}
