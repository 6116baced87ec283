/**
 * config-agent on every mock CN, in its global-zone mode (sdc-config-agent agent.js,
 * lib/agent/agent.js, bin/agent.sh). For each agent instance of the CN that registers with
 * config-agent (the agents carrying manifests, manifests.ts) it asks SAPI for the instance's
 * config, `GET /configs/:uuid` with `Accept-Version: ~2` and `If-None-Match` the last Etag
 * (sdc-clients SAPI getConfig, as the agent calls it), one request per instance, in parallel;
 * a 304 changes nothing. Otherwise the SAPI manifests and the agent's own (the local one wins
 * on the same name or path, resolveManifests) are rendered with the metadata and `auto`
 * (render.ts, auto.ts) and written to `<server dir>/config/<path on a CN>`, durably and only
 * when the content differs from the file; a written file's `post_cmd` is recorded, not run.
 *
 * Timing as the real agent's: the first check right at start (bin/agent.sh runs a
 * synchronous pass before the daemon mode; here spread over `startSpreadMs` so 10,000 CNs do
 * not all ask in the same millisecond), then the next one a uniformly random 0.5-1.5 times
 * `pollIntervalMs` (120 s) after the previous one ended (TRITON-138: never overlapping). A
 * failed check is logged and the next comes on the same schedule; a first check that fails
 * is tried again within one interval (bin/agent.sh: a random delay below the interval).
 *
 * A template that does not compile keeps the last good file and is logged once per change of
 * template; the real agent would stop at an assertion there.
 *
 * All CNs share one DueQueue job on the scheduler and the daemon's HTTP client (its background
 * lane): no timer or client per CN.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { mkdirBelow, writeFileDurable } from '../../common/durable-file.js';
import { failureFields, type Logger } from '../../common/log.js';
import { newUuid } from '../../common/uuid.js';
import type { MockCn } from '../../mockcn/types.js';
import type { AgentPluginContext, CnAgentPlugin } from '../../runtime/agent-plugin.js';
import { DueQueue } from '../../runtime/due-queue.js';
import { gzAutoMetadata } from './auto.js';
import { AGENT_MANIFESTS, type LocalManifest } from './manifests.js';
import { renderManifest } from './render.js';

export interface ConfigAgentOptions {
  /** config-agent's `pollInterval` (its default when no config file exists: 120 s). */
  pollIntervalMs: number;
  /** The first checks of CNs starting together are spread over this. */
  startSpreadMs: number;
  /** The due-queue's resolution. */
  tickMs: number;
  requestTimeoutMs: number;
}

export const DEFAULT_CONFIG_AGENT_OPTIONS: ConfigAgentOptions = {
  pollIntervalMs: 120_000,
  startSpreadMs: 10_000,
  tickMs: 1000,
  requestTimeoutMs: 30_000,
};

/** A manifest as config-agent resolves it: SAPI's or the agent's own. */
interface Manifest {
  name: string;
  path: string;
  template: string;
  post_cmd?: string;
}

interface SapiConfig {
  manifests: Manifest[];
  metadata: Record<string, unknown>;
}

export interface PostCmdRecord {
  at: string;
  instance: string;
  manifest: string;
  path: string;
  post_cmd: string;
}

interface CnState {
  cn: MockCn;
  /** Instance uuid -> agent name, for the agents that carry manifests. */
  instances: Map<string, string>;
  etags: Map<string, string>;
  /** sha1 of each file's content as last written or read (by path on a CN). */
  files: Map<string, string>;
  /** The render problem last logged, per manifest: logged again only when it changes. */
  renderProblems: Map<string, string>;
  postCmds: PostCmdRecord[];
  /** Date.now() of the last check that every instance answered. */
  lastOk?: number;
  /** Date.now() of the first check since the CN was attached. */
  firstCheckAt?: number;
  lastError?: string;
  checks: number;
  checking: boolean;
  /** The check in flight: a detach waits for it, so no file is written into a removed CN's dir. */
  running?: Promise<void>;
}

const POST_CMDS_KEPT = 20;

/** SAPI does not know an instance of a CN that never had a check succeed: not adopted yet. */
class NotAdoptedYet extends Error {}

export class ConfigAgentPlugin implements CnAgentPlugin {
  readonly name = 'config-agent';
  readonly options: ConfigAgentOptions;
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly cns = new Map<string, CnState>();
  private readonly due: DueQueue<string>;
  private readonly counters = {
    checks: 0,
    checkFailures: 0,
    requests: 0,
    notModified: 0,
    configsChanged: 0,
    filesWritten: 0,
    filesUnchanged: 0,
    postCmds: 0,
    renderErrors: 0,
    writeErrors: 0,
  };

  constructor(ctx: AgentPluginContext, options: Partial<ConfigAgentOptions> = {}) {
    this.ctx = ctx;
    this.options = { ...DEFAULT_CONFIG_AGENT_OPTIONS, ...options };
    this.log = ctx.log.child({ component: 'config-agent' });
    this.due = new DueQueue(ctx.scheduler, this.options.tickMs, (uuids) => {
      for (const u of uuids) void this.check(u);
    });
  }

  start(): void {
    if (this.ctx.urls.sapi) this.due.start();
  }

  stop(): void {
    this.due.stop();
  }

  attach(cn: MockCn): void {
    if (!this.ctx.urls.sapi) return;
    const instances = servedInstances(cn);
    const old = this.cns.get(cn.uuid);
    const st: CnState = old && old.cn === cn
      ? { ...old, instances }
      : { cn, instances, etags: new Map(), files: new Map(), renderProblems: new Map(), postCmds: [], checks: 0, checking: false };
    this.cns.set(cn.uuid, st);
    if (instances.size > 0 && !st.checking) this.due.set(cn.uuid, Math.random() * this.options.startSpreadMs);
  }

  detach(uuid: string): Promise<void> | undefined {
    const running = this.cns.get(uuid)?.running;
    this.cns.delete(uuid);
    this.due.delete(uuid);
    return running;
  }

  /** Down: no checks; up: a first check again, as at a CN's boot (bin/agent.sh's synchronous run). */
  powerChanged(cn: MockCn): void {
    if (this.cns.has(cn.uuid)) this.due.followPower(cn.uuid, cn.power === 'down', this.options.startSpreadMs);
  }

  stats(): Record<string, number> {
    const now = Date.now();
    let stale = 0;
    for (const st of this.cns.values()) if (st.instances.size > 0 && this.isStale(st, now)) stale++;
    return { ...this.counters, servers: this.cns.size, staleServers: stale };
  }

  /** What a CN's config-agent knows now: for list-servers and the fleet page. */
  describe(uuid: string): Record<string, unknown> | undefined {
    const st = this.cns.get(uuid);
    if (!st) return undefined;
    const now = Date.now();
    return {
      configAgeSeconds: st.lastOk === undefined ? null : Math.round((now - st.lastOk) / 1000),
      configStale: st.instances.size > 0 && this.isStale(st, now),
      configChecks: st.checks,
      configError: st.lastError ?? null,
    };
  }

  /** A CN's instances, files and recorded post_cmds (the control API's GET /servers/:uuid/config-agent). */
  details(uuid: string): Record<string, unknown> | undefined {
    const st = this.cns.get(uuid);
    if (!st) return undefined;
    return {
      ...this.describe(uuid),
      lastCheck: st.lastOk === undefined ? null : new Date(st.lastOk).toISOString(),
      instances: Object.fromEntries(st.instances),
      files: [...st.files.keys()].sort().map((p) => ({ path: p, file: this.fileOf(st.cn, p) })),
      postCmds: st.postCmds,
    };
  }

  /** A check older than the longest interval the agent waits (1.5 x), and a spare one. */
  private isStale(st: CnState, now: number): boolean {
    const limit = 1.5 * this.options.pollIntervalMs + this.options.requestTimeoutMs;
    const since = st.lastOk ?? st.firstCheckAt;
    return since !== undefined && now - since > limit;
  }

  private fileOf(cn: MockCn, cnPath: string): string {
    const rel = path.normalize(cnPath).replace(/^(\.\.(\/|$))+/, '').replace(/^\/+/, '');
    return path.join(cn.paths.dir, 'config', rel);
  }

  private nextDelay(st: CnState): number {
    const p = this.options.pollIntervalMs;
    // agent.js getDelay: uniform in [0.5, 1.5] x pollInterval; bin/agent.sh retries a failed
    // first synchronous run after a random delay below the interval.
    if (st.lastOk === undefined && st.lastError !== undefined) return Math.random() * p;
    return p * 0.5 + Math.random() * p;
  }

  private async check(uuid: string): Promise<void> {
    const st = this.cns.get(uuid);
    if (!st || st.checking || st.cn.power === 'down') return;
    // The agents as they are now: an agent_install or agents_uninstall since changes them.
    st.instances = servedInstances(st.cn);
    if (st.instances.size === 0) return;
    st.checking = true;
    st.checks++;
    st.firstCheckAt ??= Date.now();
    this.counters.checks++;
    const reqId = newUuid();
    const failures: Error[] = [];
    st.running = Promise.all(
      [...st.instances].map(([inst, agent]) =>
        this.checkInstance(st, inst, agent, reqId).catch((err: unknown) => {
          failures.push(err as Error);
        }),
      ),
    ).then(() => undefined);
    await st.running;
    st.checking = false;
    delete st.running;
    if (this.cns.get(uuid) !== st) return;
    if (failures.length === 0) {
      st.lastOk = Date.now();
      delete st.lastError;
    } else {
      this.counters.checkFailures++;
      const first = failures[0]!;
      // A new CN's instances not adopted by SAPI yet (sapi-instances does it after the CN's
      // registration) is how a CN starts, not a fault: INFO, and no error in status.
      const notYet = failures.every((f) => f instanceof NotAdoptedYet);
      if (!notYet) this.ctx.countError('config-agent.sapi');
      // Logged when a CN's failure changes, not every round.
      if (st.lastError !== first.message) {
        if (notYet) this.log.info({ server: uuid, req_id: reqId, err: first.message }, "SAPI has not adopted this CN's agent instances yet; checking again soon");
        else this.log.warn({ server: uuid, req_id: reqId, err: first.message }, 'checkAndRefresh: finish: failure');
      }
      st.lastError = first.message;
    }
    this.due.set(uuid, this.nextDelay(st));
  }

  private async checkInstance(st: CnState, inst: string, agent: string, reqId: string): Promise<void> {
    const headers: Record<string, string> = { 'accept-version': '~2', 'x-request-id': reqId };
    const etag = st.etags.get(inst);
    if (etag) headers['if-none-match'] = etag;
    const url = `${this.ctx.urls.sapi}/configs/${encodeURIComponent(inst)}`;
    this.counters.requests++;
    const res = await this.ctx.http.request<SapiConfig>({ method: 'GET', url, headers, background: true, timeoutMs: this.options.requestTimeoutMs });
    if (res.statusCode === 304) {
      this.counters.notModified++;
      return;
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const body = res.body as { code?: string; message?: string } | undefined;
      if (res.statusCode === 404 && st.lastOk === undefined) throw new NotAdoptedYet(`SAPI GetConfig ${inst}: 404${body?.message ? ` ${body.message}` : ''}`);
      throw new Error(`SAPI GetConfig ${inst}: ${res.statusCode}${body?.message ? ` ${body.message}` : ''}`);
    }
    const config = res.body;
    if (!config || !Array.isArray(config.manifests) || typeof config.metadata !== 'object' || config.metadata === null) {
      throw new Error(`SAPI GetConfig ${inst}: not a config`);
    }
    this.counters.configsChanged++;
    const manifests = resolveManifests(config.manifests, AGENT_MANIFESTS[agent] ?? []);
    const auto = { ...gzAutoMetadata(st.cn.sysinfo), INSTANCE_UUID: inst };
    let allWritten = true;
    for (const m of manifests) if (!(await this.refresh(st, inst, m, config.metadata, auto))) allWritten = false;
    // The Etag is kept only once every file is as the config says: a file that could not be
    // written is tried again at the next check.
    const tag = res.headers.etag;
    if (typeof tag === 'string' && allWritten) st.etags.set(inst, tag);
  }

  /** Render and write one manifest; false when the file could not be written. */
  private async refresh(st: CnState, inst: string, m: Manifest, metadata: Record<string, unknown>, auto: Record<string, unknown>): Promise<boolean> {
    let contents: string;
    try {
      contents = renderManifest(m.template, metadata, auto);
      st.renderProblems.delete(m.name);
    } catch (err) {
      this.counters.renderErrors++;
      const problem = `${sha1(m.template)} ${(err as Error).message}`;
      if (st.renderProblems.get(m.name) !== problem) {
        st.renderProblems.set(m.name, problem);
        this.log.error({ server: st.cn.uuid, instance: inst, manifest: m.name, err: (err as Error).message }, 'failed to render configuration file; keeping the last one');
      }
      return true;
    }
    const file = this.fileOf(st.cn, m.path);
    const hash = sha1(contents);
    let known = st.files.get(m.path);
    if (known === undefined) {
      known = await fsp.readFile(file).then((b) => sha1(b), () => '');
      st.files.set(m.path, known);
    }
    if (known === hash) {
      this.counters.filesUnchanged++;
      return true;
    }
    // Detached meanwhile (the CN is being removed): its dir is going, nothing is written there.
    if (this.cns.get(st.cn.uuid) !== st) return false;
    try {
      await mkdirBelow(st.cn.paths.dir, path.dirname(file));
      await writeFileDurable(file, contents);
    } catch (err) {
      // The CN was removed while its file was rendered: nothing to write to, nothing wrong.
      if (this.cns.get(st.cn.uuid) !== st) return false;
      this.counters.writeErrors++;
      this.log.error({ server: st.cn.uuid, path: m.path, ...failureFields(err) }, 'failed to write config file');
      return false;
    }
    st.files.set(m.path, hash);
    this.counters.filesWritten++;
    this.log.debug({ server: st.cn.uuid, path: m.path }, 'updated file');
    if (m.post_cmd) {
      this.counters.postCmds++;
      st.postCmds.push({ at: new Date().toISOString(), instance: inst, manifest: m.name, path: m.path, post_cmd: m.post_cmd });
      if (st.postCmds.length > POST_CMDS_KEPT) st.postCmds.shift();
      this.log.debug({ server: st.cn.uuid, post_cmd: m.post_cmd }, 'post_cmd recorded (not run on a mock CN)');
    }
    return true;
  }
}

/** Instance uuid -> agent name, for the CN's agents that register with config-agent. */
function servedInstances(cn: MockCn): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of cn.agents ?? []) if (a.uuid && AGENT_MANIFESTS[a.name]) out.set(a.uuid, a.name);
  return out;
}

function sha1(data: string | Buffer): string {
  return createHash('sha1').update(data).digest('hex');
}

/**
 * sdc-config-agent resolveManifests: SAPI's manifests (the first of two with one path wins),
 * then the local ones, each replacing a SAPI manifest of the same name or path.
 */
export function resolveManifests(sapi: readonly Manifest[], local: readonly LocalManifest[]): Manifest[] {
  const byName = new Map<string, Manifest>();
  const pathOwner = new Map<string, string>();
  for (const m of sapi) {
    if (!m || typeof m.name !== 'string' || typeof m.path !== 'string' || typeof m.template !== 'string') continue;
    if (pathOwner.has(m.path)) continue;
    byName.set(m.name, m);
    pathOwner.set(m.path, m.name);
  }
  const localPaths = new Set<string>();
  for (const m of local) {
    const over = byName.get(m.name) ?? byName.get(pathOwner.get(m.path) ?? '');
    if (over) {
      byName.delete(over.name);
      pathOwner.delete(over.path);
    }
    if (localPaths.has(m.path)) continue;
    byName.set(m.name, m);
    localPaths.add(m.path);
  }
  return [...byName.values()];
}

export function createConfigAgentPlugin(options: Partial<ConfigAgentOptions> = {}): (ctx: AgentPluginContext) => ConfigAgentPlugin {
  return (ctx) => new ConfigAgentPlugin(ctx, options);
}
