/**
 * `<data-dir>/daemon.json`: how tools and tests find a running daemon (pid, control API,
 * Triton URLs, every mock CN's agent address). Rewritten durably whenever something in it
 * changes, coalesced: one write in flight at a time and bursts (creating 1,000 CNs) folded
 * into a few writes.
 */
import { promises as fsp, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { failureFields, type Logger } from '../common/log.js';
import type { ServiceUrls } from '../runtime/agent-plugin.js';

export const DAEMON_JSON = 'daemon.json';

export interface DaemonJson {
  pid: number;
  /** This data dir's daemon id, and its CNs' sysinfo `Mockcloud Daemon` ("<id>@<host>"). */
  daemonId?: string;
  hostedBy?: string;
  startedAt: string;
  /** 'starting' while the data dir is being loaded, then 'running'. */
  state: 'starting' | 'running';
  dataDir: string;
  /** The control API; `socket`: the CLI's own way in (a Unix socket, owner only), when there is one. */
  control: { ip: string; port: number; url: string; socket?: string };
  /** The live fleet web page (src/ui; `mockcloud ui`); absent with --ui-address none. */
  ui?: { ip: string; port: number; url: string };
  urls: ServiceUrls;
  bindIp: string;
  /** 'shared': every CN's agent IP is the bind IP; 'loopback': each CN has its own 127.x.y.z. */
  agentIps?: 'shared' | 'loopback';
  /**
   * Where cmon-agent listens (absent when the daemon runs without it): one port for every
   * address (9163 unless --cmon-port); in loopback mode one address per CN.
   */
  cmonAgent?: { port: number; addresses: { ip: string; port: number }[] };
  /** uuid → where that CN's cn-agent listens. */
  servers: Record<string, { ip: string; port: number }>;
}

export function daemonJsonPath(dataDir: string): string {
  return path.join(dataDir, DAEMON_JSON);
}

/** Reads daemon.json; undefined when absent or unreadable. */
export async function readDaemonJson(dataDir: string): Promise<DaemonJson | undefined> {
  try {
    const value = JSON.parse(await fsp.readFile(daemonJsonPath(dataDir), 'utf8')) as DaemonJson;
    return typeof value?.pid === 'number' && typeof value.control?.url === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is a process that still runs. A process killed with -9 is gone for this
 * purpose at once, even while the kernel still has it: a zombie its parent has not reaped yet
 * (a shell that exec'd another program never will), or one with SIGKILL pending that is
 * finishing a long fsync; neither runs a line of its code again. Where /proc cannot say
 * (not Linux), `kill(pid, 0)` answers alone.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isDeadInProc(pid);
}

/** /proc says the process is a zombie, or dead, or has SIGKILL pending. */
function isDeadInProc(pid: number): boolean {
  let stat: string;
  let status: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return false; // no such /proc (or it went meanwhile): kill(0) has answered
  }
  // "pid (comm) S ...": the comm may hold spaces and parentheses; the state follows the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (state === 'Z' || state === 'X' || state === 'x') return true;
  const SIGKILL_BIT = 1n << 8n; // signal 9
  for (const key of ['SigPnd', 'ShdPnd']) {
    const m = new RegExp(`^${key}:\\s*([0-9a-f]+)$`, 'm').exec(status);
    if (m && (BigInt(`0x${m[1]}`) & SIGKILL_BIT) !== 0n) return true;
  }
  return false;
}

const MAX_COALESCE_MS = 2000;

/** Indented like any JSON file, but one line per server: 10,000 CNs stay a readable ~1 MB. */
export function serializeDaemonJson(value: DaemonJson): string {
  const { servers, ...rest } = value;
  const head = JSON.stringify({ ...rest, servers: {} }, null, 2);
  const lines = Object.entries(servers).map(([uuid, a]) => `    ${JSON.stringify(uuid)}: ${JSON.stringify(a)}`);
  if (lines.length === 0) return `${head}\n`;
  return `${head.slice(0, head.lastIndexOf('{}'))}{\n${lines.join(',\n')}\n  }\n}\n`;
}

export class DaemonJsonWriter {
  private writing: Promise<void> | undefined;
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly build: () => DaemonJson,
    private readonly log: Logger,
    /** Bursts of changes within this window become one write. */
    private readonly coalesceMs = 100,
  ) {}

  /** How long the last write took, ms: with 10,000 CNs a write is no longer cheap. */
  private lastWriteMs = 0;

  /** Spend at most about a tenth of the time rewriting the file while CNs come and go. */
  private get delayMs(): number {
    return Math.min(MAX_COALESCE_MS, Math.max(this.coalesceMs, this.lastWriteMs * 10));
  }

  /** Something changed: write soon. */
  markDirty(): void {
    if (this.closed) return;
    this.dirty = true;
    if (this.timer || this.writing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.delayMs);
    this.timer.unref();
  }

  /** Write now (and again if changes arrive meanwhile); resolves when the file is current. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.dirty = true;
    while (this.dirty && !this.closed) {
      if (this.writing) {
        await this.writing;
        continue;
      }
      this.dirty = false;
      const started = performance.now();
      this.writing = writeFileDurable(this.file, serializeDaemonJson(this.build()))
        .catch((err: unknown) => this.log.error({ ...failureFields(err), file: this.file }, 'cannot write daemon.json'))
        .finally(() => {
          this.lastWriteMs = performance.now() - started;
          this.writing = undefined;
        });
      await this.writing;
    }
  }

  /** Stop writing and remove the file (a clean shutdown: no daemon here any more). */
  async remove(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing) await this.writing;
    await fsp.unlink(this.file).catch(() => undefined);
  }
}
