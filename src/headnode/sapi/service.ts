/**
 * The dev headnode's SAPI: the subset mock CNs and the tools around them use (applications,
 * services of type agent, agent instances; routes.ts). State is one document of the headnode
 * store ("sapi") plus a log of instance writes (instance-log.ts) folded into it; every write
 * is answered once it is on disk. A fresh data dir starts with what a fresh DC has (seed.ts).
 */
import path from 'node:path';
import { failureFields, type Logger } from '../../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { closeServer, createServer, listen, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { InstanceLog, type InstanceOp } from './instance-log.js';
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
export const SAPI_INSTANCE_LOG = 'sapi-instances.jsonl';
/** The log is folded into the document once it has this many lines, or twice the instances. */
const COMPACT_MIN_LINES = 50_000;

export class SapiService {
  private readonly log: Logger;
  private readonly opts: SapiServiceOptions;
  private state = new SapiState();
  private doc: StateDocument | undefined;
  private instanceLog: InstanceLog | undefined;
  private compacting: Promise<void> | undefined;
  private server: RestifyServer | undefined;
  private _url: string | undefined;
  /** GET /configs/:uuid answered: with the config (200) and unchanged (304). */
  private readonly configs = { served: 0, notModified: 0 };

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
    return {
      applications: this.state.applications.size,
      services: this.state.services.size,
      instances: this.state.instances.size,
      manifests: this.state.manifests.size,
      configsServed: this.configs.served,
      configsNotModified: this.configs.notModified,
    };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('SAPI is already started');
    const state = new SapiState();
    const doc = this.opts.store.document(SAPI_DOC, () => state.snapshot());
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
    const log = new InstanceLog(path.join(this.opts.store.dir, SAPI_INSTANCE_LOG));
    const replayed = await log.replay((op) => applyOp(state, op));
    await log.open();
    if (replayed > 0) await log.compact(() => doc.save());
    this.state = state;
    this.doc = doc;
    this.instanceLog = log;

    // SAPI's restify server name, as its Server header shows it.
    const server = createServer({ name: 'sapi/2.0.0', log: this.log });
    mountSapiRoutes(server, {
      state,
      log: this.log,
      commit: () => doc.save(),
      record: (op) => this.record(op),
      onConfig: (status) => (status === 304 ? this.configs.notModified++ : this.configs.served++),
    });
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, instances: state.instances.size }, 'SAPI listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this._url = undefined;
    const doc = this.doc;
    const log = this.instanceLog;
    if (doc && log) {
      await this.compacting;
      await log.compact(() => doc.flush()).catch((err: unknown) => this.log.error(failureFields(err), 'saving SAPI state failed'));
      await log.close();
    }
    this.doc = undefined;
    this.instanceLog = undefined;
  }

  private async record(op: InstanceOp): Promise<void> {
    const log = this.instanceLog!;
    await log.append(op);
    if (!this.compacting && log.lines > Math.max(COMPACT_MIN_LINES, 2 * this.state.instances.size)) {
      const doc = this.doc!;
      this.compacting = log
        .compact(() => doc.save())
        .catch((err: unknown) => this.log.error(failureFields(err), 'folding the SAPI instance log into its document failed'))
        .finally(() => {
          this.compacting = undefined;
        });
    }
  }
}

function applyOp(state: SapiState, op: InstanceOp): void {
  if (op.op === 'put') state.instances.set(op.instance.uuid, op.instance);
  else state.instances.delete(op.uuid);
}
