/**
 * The dev headnode's SAPI: the subset mock CNs and the tools around them use (applications,
 * services of type agent, agent instances; routes.ts). State is one document of the headnode
 * store ("sapi"); every write is answered once it is on disk. A fresh data dir starts with
 * what a fresh DC has (seed.ts).
 */
import type { Logger } from '../../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { closeServer, createServer, listen, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { SapiState } from './model.js';
import { mountSapiRoutes } from './routes.js';
import { seedFreshDc } from './seed.js';

export interface SapiServiceOptions {
  log: Logger;
  store: HeadnodeStore;
  /** The DC's UFDS admin user: owner of the `sdc` application. */
  adminUuid?: string;
  /** `sdc` application metadata. */
  datacenterName?: string;
  dnsDomain?: string;
}

export const SAPI_DOC = 'sapi';

export class SapiService {
  private readonly log: Logger;
  private readonly opts: SapiServiceOptions;
  private state = new SapiState();
  private doc: StateDocument | undefined;
  private server: RestifyServer | undefined;
  private _url: string | undefined;

  constructor(opts: SapiServiceOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: 'sapi' });
  }

  get url(): string {
    if (!this._url) throw new Error('SAPI is not started');
    return this._url;
  }

  /** Counters for status output and tests. */
  stats(): Record<string, number> {
    return { applications: this.state.applications.size, services: this.state.services.size, instances: this.state.instances.size };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('SAPI is already started');
    const state = new SapiState();
    // Instances of every agent of every CN: saved at most once a second when nobody waits,
    // and group-committed when a write is being answered.
    const doc = this.opts.store.document(SAPI_DOC, () => state.snapshot(), { lazyDelayMs: 1000 });
    const stored = await doc.load();
    if (stored === undefined) {
      seedFreshDc(state, {
        adminUuid: this.opts.adminUuid ?? DEFAULT_ADMIN_UUID,
        datacenterName: this.opts.datacenterName ?? 'coal',
        ...(this.opts.dnsDomain ? { dnsDomain: this.opts.dnsDomain } : {}),
      });
      await doc.save();
      this.log.info({ services: state.services.size }, 'SAPI: seeded a fresh DC');
    } else {
      state.restore(stored);
    }
    this.state = state;
    this.doc = doc;

    // SAPI's restify server name, as its Server header shows it.
    const server = createServer({ name: 'sapi/2.0.0', log: this.log });
    mountSapiRoutes(server, { state, log: this.log, commit: () => doc.save() });
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, instances: state.instances.size }, 'SAPI listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this._url = undefined;
    if (this.doc) await this.doc.flush().catch((err: unknown) => this.log.error({ err }, 'saving SAPI state failed'));
    this.doc = undefined;
  }
}
