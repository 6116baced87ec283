/**
 * The dev headnode's FWAPI: the rules (a document of the headnode store, "fwapi"), the HTTP
 * routes (routes.ts) and the update fan-out to the firewallers on its fast port (updates.ts).
 */
import type { JsonHttpClient } from '../../common/http-client.js';
import { failureFields, type Logger } from '../../common/log.js';
import { closeServer, createServer, listen, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { mountFwapiRoutes } from './routes.js';
import type { RuleRecord } from './rules.js';
import { UpdateServer } from './updates.js';

export interface FwapiServiceOptions {
  log: Logger;
  store: HeadnodeStore;
  http: JsonHttpClient;
  /** FWAPI's own id for the stream (`server_id`): its host. */
  serverId?: string;
  /** FWAPI's `pollInterval`: how often queued updates are sent (3 s). */
  pollIntervalMs?: number;
  /** The fast port (FWAPI's 2020); 0: any free one. */
  fastPort?: number;
}

export const FWAPI_DOC = 'fwapi';

export class FwapiService {
  private readonly log: Logger;
  private readonly rules = new Map<string, RuleRecord>();
  private doc: StateDocument | undefined;
  private server: RestifyServer | undefined;
  private updates: UpdateServer | undefined;
  private _url: string | undefined;
  private vmapiUrl: string | undefined;

  constructor(private readonly opts: FwapiServiceOptions) {
    this.log = opts.log.child({ component: 'fwapi' });
  }

  get url(): string {
    if (!this._url) throw new Error('FWAPI is not started');
    return this._url;
  }

  /** The update stream, `tcp://host:port`. */
  get fastAddress(): string {
    if (!this.updates || !this._url) throw new Error('FWAPI is not started');
    return `tcp://${new URL(this._url).host.replace(/:\d+$/, '')}:${this.updates.port}`;
  }

  /** VMAPI, for GET /firewalls/vms/:uuid (known once VMAPI has started). */
  setVmapi(url: string): void {
    this.vmapiUrl = url;
    if (this.ctxRef) this.ctxRef.vmapiUrl = url;
  }

  stats(): Record<string, number> {
    return { rules: this.rules.size, clients: this.updates?.state.clients.length ?? 0, updatesQueued: this.updates?.stats.queued ?? 0, updatesSent: this.updates?.stats.sent ?? 0 };
  }

  /** Send the queued updates now (tests; FWAPI sends them every pollInterval). */
  flushUpdates(): void {
    this.updates?.flush();
  }

  private ctxRef: { vmapiUrl?: string } | undefined;

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('FWAPI is already started');
    this.rules.clear();
    const doc = this.opts.store.document(FWAPI_DOC, () => ({ version: 1, rules: [...this.rules.values()] }));
    const stored = (await doc.load()) as { version?: number; rules?: RuleRecord[] } | undefined;
    for (const r of stored?.rules ?? []) if (r && typeof r.uuid === 'string') this.rules.set(r.uuid, r);
    this.doc = doc;
    const updates = new UpdateServer(this.log, this.opts.serverId ?? 'fwapi', this.opts.pollIntervalMs ?? 3000);
    await updates.listen(opts.host, this.opts.fastPort ?? 0);
    this.updates = updates;
    const server = createServer({ name: 'fwapi', log: this.log });
    const ctx = {
      rules: this.rules,
      updates,
      log: this.log,
      http: this.opts.http,
      ...(this.vmapiUrl ? { vmapiUrl: this.vmapiUrl } : {}),
      commit: () => doc.save(),
    };
    this.ctxRef = ctx;
    mountFwapiRoutes(server, ctx);
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, fast: this.fastAddress, rules: this.rules.size }, 'FWAPI listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    await this.updates?.close();
    this.updates = undefined;
    this._url = undefined;
    await this.doc?.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving FWAPI rules failed'));
    this.doc = undefined;
  }
}
