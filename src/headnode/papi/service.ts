/**
 * The dev headnode's PAPI (sdc-papi): packages, as VMAPI looks them up for provisions and
 * resizes and operators manage them (routes.ts). State is one document of the headnode store
 * ("papi"); every write is answered once it is on disk. A fresh data dir starts with what a
 * fresh development DC has (seed.ts): the headnode's `sdc_*` packages and the `sample-*` ones.
 */
import type { Logger } from '../../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { newUuid } from '../../common/uuid.js';
import { closeServer, createServer, listen, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { PapiState } from './model.js';
import { mountPapiRoutes } from './routes.js';
import { samplePackages, sdcPackages } from './seed.js';

export interface PapiServiceOptions {
  log: Logger;
  store: HeadnodeStore;
  /** The DC's UFDS admin user: owner of the `sdc_*` packages. */
  adminUuid?: string;
}

export const PAPI_DOC = 'papi';

/** sdc-papi's package.json version: its restify server's name and version. */
const PAPI_VERSION = '7.2.5';

export class PapiService {
  private readonly log: Logger;
  private readonly opts: PapiServiceOptions;
  private state = new PapiState();
  private doc: StateDocument | undefined;
  private server: RestifyServer | undefined;
  private _url: string | undefined;

  constructor(opts: PapiServiceOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: 'papi' });
  }

  get url(): string {
    if (!this._url) throw new Error('PAPI is not started');
    return this._url;
  }

  stats(): Record<string, number> {
    return { packages: this.state.size };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('PAPI is already started');
    const state = new PapiState();
    const doc = this.opts.store.document(PAPI_DOC, () => state.snapshot());
    const stored = await doc.load();
    if (stored === undefined) {
      for (const pkg of sdcPackages(this.opts.adminUuid ?? DEFAULT_ADMIN_UUID)) state.create(String(pkg.uuid), pkg);
      for (const pkg of samplePackages()) {
        const uuid = newUuid();
        state.create(uuid, { ...pkg, uuid });
      }
      await doc.save();
      this.log.info({ packages: state.size }, 'PAPI: seeded a fresh DC');
    } else {
      state.restore(stored);
    }
    this.state = state;
    this.doc = doc;

    const server = createServer({ name: `SDC Package API ${PAPI_VERSION}`, log: this.log });
    mountPapiRoutes(server, { state, log: this.log, commit: () => doc.save() });
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, packages: state.size }, 'PAPI listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this._url = undefined;
    await this.doc?.flush().catch((err: unknown) => this.log.error({ err }, 'saving PAPI state failed'));
    this.doc = undefined;
  }
}
