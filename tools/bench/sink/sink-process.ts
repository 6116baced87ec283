/**
 * The benchmark's handle on the sink child process: fork it, wait for its URLs, read its
 * stats, mark and reset it, stop it. Everything bounded in time.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SINK_MAIN } from '../paths.js';
import type { SinkReadyMessage } from './main.js';
import type { SinkStats } from './sink.js';

const READY_TIMEOUT_MS = 15_000;
const REQUEST_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;

export class SinkProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly ready: SinkReadyMessage,
  ) {}

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get urls(): SinkReadyMessage['urls'] {
    return this.ready.urls;
  }

  static async start(opts: { script?: string } = {}): Promise<SinkProcess> {
    const script = opts.script ?? SINK_MAIN;
    if (!existsSync(script)) throw new Error(`the sink is not built (${script} missing): run \`npm run build\` first`);
    const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    const ready = await new Promise<SinkReadyMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the sink did not start within ${READY_TIMEOUT_MS} ms`));
      }, READY_TIMEOUT_MS);
      child.once('message', (m) => {
        clearTimeout(timer);
        resolve(m as SinkReadyMessage);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the sink exited before it was ready (code ${code}, signal ${signal})`));
      });
    });
    child.removeAllListeners('exit');
    return new SinkProcess(child, ready);
  }

  /** The sink's SAPI and FWAPI (the agents step). */
  get agentUrls(): SinkReadyMessage['agents'] {
    return this.ready.agents;
  }

  /** What the sink's SAPI and FWAPI were asked, by counter. */
  async agentStats(): Promise<{ counters: Record<string, number>; clients: number }> {
    const res = await fetch(`${this.ready.agents.sapi}/__sink/agents/stats`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return (await res.json()) as { counters: Record<string, number>; clients: number };
  }

  /** FWAPI sends this rule (fw.add_rule) to the connected firewallers. */
  async sendRule(rule: string, ownerUuid: string): Promise<void> {
    const res = await fetch(`${this.ready.agents.sapi}/__sink/agents/rule`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rule, owner_uuid: ownerUuid }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (res.status !== 202) throw new Error(`sink rule: HTTP ${res.status}`);
  }

  async stats(): Promise<SinkStats> {
    return (await this.control('GET', 'stats')) as SinkStats;
  }

  /** Start a new heartbeat-gap window; returns its start (epoch ms). */
  async mark(): Promise<number> {
    return ((await this.control('POST', 'mark')) as { markAt: number }).markAt;
  }

  async reset(scope: 'all' | 'cnapi' = 'all'): Promise<void> {
    await this.control('POST', `reset?scope=${scope}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (child.connected) child.send({ type: 'stop' });
    else child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  private async control(method: 'GET' | 'POST', what: string): Promise<unknown> {
    const res = await fetch(`${this.ready.urls.cnapi}/__sink/${what}`, { method, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await res.text();
    if (!res.ok) throw new Error(`sink ${method} /__sink/${what}: HTTP ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }
}
