/**
 * The dev headnode's NAPI: nic tags, networks, IP allocation and NICs with NAPI's wire
 * behaviour, plus its changefeed. State is one journaled document of the headnode store
 * ("napi"); every write is acknowledged only once it is on disk. A fresh data dir starts with what a
 * fresh DC has (see seed.ts).
 */
import { failureFields, type Logger } from '../../common/log.js';
import type { HeadnodeStore, JournaledDocument } from '../store.js';
import { DEFAULT_MAC_OUI } from './addr.js';
import { ChangefeedPublisher } from '../../common/changefeed/publisher.js';
import { NAPI_CHANGEFEED_RESOURCES } from '../../common/changefeed/protocol.js';
import type { NapiContext } from './context.js';
import { closeServer, createServer, listen, onUpgrade, type RestifyServer } from '../http.js';
import { mountNapiRoutes } from './routes.js';
import { DEFAULT_SEED_NETWORKS, seedFreshDc, type SeedNetwork } from './seed.js';
import { NapiState } from './state.js';

/** The UFDS admin user of the dev DC (owner of admin NICs and reserved addresses). */
export const DEFAULT_HEADNODE_ADMIN_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';

export interface NapiServiceOptions {
  log: Logger;
  store: HeadnodeStore;
  /** UFDS admin uuid (NAPI's `ufdsAdminUuid`). */
  adminUuid?: string;
  /** OUI for generated MACs, 6 hex digits (NAPI's `macOUI`, default 90b8d0). */
  macOui?: string;
  /** Networks created on first start (default: admin and external). */
  seedNetworks?: SeedNetwork[];
}

export const NAPI_DOC = 'napi';

export class NapiService {
  private readonly log: Logger;
  private readonly store: HeadnodeStore;
  private readonly opts: NapiServiceOptions;
  private state: NapiState;
  private doc: JournaledDocument | undefined;
  private changefeed: ChangefeedPublisher | undefined;
  private server: RestifyServer | undefined;
  private _url: string | undefined;

  constructor(opts: NapiServiceOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: 'napi' });
    this.store = opts.store;
    this.state = new NapiState(opts.adminUuid ?? DEFAULT_HEADNODE_ADMIN_UUID);
    if (opts.macOui !== undefined && !/^[0-9a-f]{6}$/i.test(opts.macOui.replace(/[:-]/g, ''))) {
      throw new Error(`invalid MAC OUI ${JSON.stringify(opts.macOui)}: want 6 hex digits`);
    }
  }

  get url(): string {
    if (!this._url) throw new Error('NAPI is not started');
    return this._url;
  }

  /** Counters for status output. */
  stats(): Record<string, number> {
    return { nic_tags: this.state.nicTags.size, networks: this.state.networks.size, nics: this.state.nics.size };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('NAPI is already started');
    const state = new NapiState(this.state.adminUuid);
    // Every NIC change is acknowledged once on disk: journaled, so a change costs its own
    // record, not a rewrite of every NIC (store.ts).
    const doc = this.store.journaled(NAPI_DOC, { snapshot: () => state.snapshot(), drain: () => state.drainJournal() });
    const stored = await doc.loadJournaled();
    if (stored.snapshot === undefined) {
      seedFreshDc({ state }, this.opts.seedNetworks ?? DEFAULT_SEED_NETWORKS);
      await doc.save();
      this.log.info({ networks: state.networks.size }, 'NAPI: seeded a fresh DC');
    } else {
      state.restore(stored.snapshot, stored.entries);
    }
    this.state = state;
    this.doc = doc;

    const changefeed = new ChangefeedPublisher({ log: this.log, resources: NAPI_CHANGEFEED_RESOURCES });
    const ctx: NapiContext = {
      state,
      log: this.log,
      macOui: (this.opts.macOui ?? DEFAULT_MAC_OUI).replace(/[:-]/g, '').toLowerCase(),
      commit: () => doc.save(),
      publish: (item) => changefeed.publish(item),
    };
    const server = createServer({ name: 'napi', log: this.log });
    mountNapiRoutes(server, ctx, changefeed, this.log);
    onUpgrade(server, (req, socket, head) => changefeed.handleUpgrade(req, socket, head));
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.changefeed = changefeed;
    this.log.info({ url: this._url, nics: state.nics.size }, 'NAPI listening');
  }

  async stop(): Promise<void> {
    this.changefeed?.close();
    this.changefeed = undefined;
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this._url = undefined;
    if (this.doc) {
      await this.doc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving NAPI state failed'));
    }
    this.doc = undefined;
  }
}
