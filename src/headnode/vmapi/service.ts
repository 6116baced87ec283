/**
 * The dev headnode's VMAPI: the VM store vm-agent and the workflows write, ListVms/GetVm
 * for consumers, metadata and role tags, and the VM actions as in-process jobs that drive
 * CNAPI (tasks and waitlist tickets), NAPI and IMGAPI over HTTP as VMAPI's workflows do.
 * State (VMs with their role tags, jobs) lives in two documents of the headnode store.
 */
import type { Pacing } from '../../timing/wait.js';
import { CHANGEFEED_PATH, CHANGEFEED_STATS_PATH } from '../../common/changefeed/protocol.js';
import { ChangefeedPublisher } from '../../common/changefeed/publisher.js';
import { JsonHttpClient } from '../../common/http-client.js';
import { failureFields, type Logger } from '../../common/log.js';
import { closeServer, createServer, listen, onUpgrade, ok, route, type Req, type Res, type RestifyServer } from '../http.js';
import { VMAPI_CHANGEFEED_RESOURCES, vmChange } from './changefeed.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import type { VmapiContext } from './context.js';
import { JobRunner } from './jobs.js';
import { Peers } from './peers.js';
import { mountJobRoutes } from './routes-jobs.js';
import { mountMetadataRoutes } from './routes-metadata.js';
import { mountRoleTagRoutes } from './routes-role-tags.js';
import { mountVmRoutes } from './routes-vms.js';
import { VmRegistry } from './vms.js';
import type { WorkflowEnv } from './workflow-steps.js';
import { workflows } from './workflows.js';

/**
 * VMAPI's curl user-agent plug-in (sdc-vmapi lib/restify-plugins/curl-user-agent.js): curl gets
 * `Connection: close`, and no Content-Length on a HEAD answer (curl would wait for the body).
 */
function curlUserAgent(req: Req, res: Res, next: () => void): void {
  const ua = req.headers['user-agent'];
  if (ua && /^curl.+/.test(ua)) {
    res.setHeader('Connection', 'close');
    if (req.method === 'HEAD') res.once('header', () => res.removeHeader('content-length'));
  }
  next();
}

export interface VmapiServiceOptions {
  log: Logger;
  /** How long waitlist activations and workflow steps take (docs/timing.md); absent: no time. */
  pacing?: Pacing | undefined;
  store: HeadnodeStore;
  cnapiUrl: string;
  napiUrl: string;
  imgapiUrl: string;
  /** PAPI, where a `billing_id` is looked up (provisions, resizes); without it none is. */
  papiUrl?: string;
  /** FWAPI, for the workflows' fwapi.update step; none: the step answers "Error updating FWAPI". */
  fwapiUrl?: string;
  /** Jobs running at once (all VMs together); default 32. */
  jobConcurrency?: number;
}

export class VmapiService {
  private readonly log: Logger;
  private readonly http: JsonHttpClient;
  private readonly changefeed: ChangefeedPublisher;
  private readonly vms: VmRegistry;
  private readonly jobs: JobRunner;
  private readonly vmDoc: StateDocument;
  private readonly jobDoc: StateDocument;
  private readonly peers: Peers;
  private server: RestifyServer | undefined;
  private _url: string | undefined;

  constructor(opts: VmapiServiceOptions) {
    this.log = opts.log.child({ component: 'vmapi' });
    this.changefeed = new ChangefeedPublisher({ log: this.log, resources: VMAPI_CHANGEFEED_RESOURCES });
    this.vms = new VmRegistry((oldVm, newVm) => {
      const item = vmChange(oldVm, newVm);
      if (item) this.changefeed.publish(item);
    });
    this.http = new JsonHttpClient({ maxSockets: 512, timeoutMs: 60_000, userAgent: 'vmapi/9.16.0 (mockcloud)' });
    const trim = (u: string): string => u.replace(/\/+$/, '');
    this.peers = new Peers(this.http, {
      cnapi: trim(opts.cnapiUrl),
      napi: trim(opts.napiUrl),
      imgapi: trim(opts.imgapiUrl),
      ...(opts.papiUrl ? { papi: trim(opts.papiUrl) } : {}),
      ...(opts.fwapiUrl ? { fwapi: trim(opts.fwapiUrl) } : {}),
    });
    this.vmDoc = opts.store.document('vmapi-vms', () => this.vms.snapshot(), { lazyDelayMs: 200 });
    // Jobs: the newest 5000 are kept, saved at most once a second (nobody waits on them).
    this.jobDoc = opts.store.document('vmapi-jobs', () => ({ jobs: this.jobs.snapshot() }), { lazyDelayMs: 1000 });
    this.jobs = new JobRunner({
      log: this.log,
      concurrency: opts.jobConcurrency,
      pacing: opts.pacing,
      onChange: () => this.jobDoc.saveSoon(),
    });
  }

  get url(): string {
    if (!this._url) throw new Error('VMAPI is not started');
    return this._url;
  }

  /**
   * The dev DC's workflow API (a DC has one wf-api; here VMAPI serves `/jobs`): other services'
   * jobs, such as IMGAPI's create-from-vm, run and are polled here.
   */
  get workflowApi(): { url: string; create: JobRunner['create'] } {
    return { url: this.url, create: (def, params) => this.jobs.create(def, params) };
  }

  stats(): Record<string, number> {
    return { vms: this.vms.size, jobs_succeeded: this.jobs.stats.succeeded, jobs_failed: this.jobs.stats.failed };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    this.vms.restore(await this.vmDoc.load());
    const jdoc = (await this.jobDoc.load()) as { jobs?: unknown } | undefined;
    this.jobs.restore(jdoc?.jobs);

    const env: WorkflowEnv = {
      peers: this.peers,
      vms: this.vms,
      log: this.log,
      saveVms: () => this.vmDoc.save(),
    };
    const ctx: VmapiContext = {
      log: this.log,
      vms: this.vms,
      jobs: this.jobs,
      peers: this.peers,
      workflows: workflows(env),
      env,
      url: () => this.url,
      saveVms: () => this.vmDoc.save(),
    };
    const server = createServer({ name: 'vmapi', log: this.log });
    server.pre(curlUserAgent);
    mountVmRoutes(server, ctx);
    mountJobRoutes(server, ctx);
    mountRoleTagRoutes(server, ctx);
    mountMetadataRoutes(server, ctx);
    server.get({ path: CHANGEFEED_PATH, name: 'changefeeds' }, route(this.log, () => ok(this.changefeed.resourcesBody())));
    server.get({ path: CHANGEFEED_STATS_PATH, name: 'changefeeds_stats' }, route(this.log, () => ok(this.changefeed.statsBody())));
    onUpgrade(server, (req, socket, head) => this.changefeed.handleUpgrade(req, socket, head));
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, vms: this.vms.size }, 'VMAPI listening');
  }

  async stop(): Promise<void> {
    this.jobs.stop();
    this.changefeed.close();
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this.http.close();
    await Promise.all([
      this.vmDoc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving VMs failed')),
      this.jobDoc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving jobs failed')),
    ]);
  }
}
