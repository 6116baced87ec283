/**
 * The embedded dev headnode: NAPI, IMGAPI, SAPI, PAPI, FWAPI, CNAPI and VMAPI subsets on
 * loopback ports, sharing one persistence store under `<data-dir>/headnode/`. Services start in
 * dependency order (NAPI, IMGAPI, SAPI, PAPI and FWAPI first, since CNAPI and VMAPI call them) and
 * stop in reverse. The addresses are written to `<data-dir>/headnode.json` once everything listens
 * (and the file is removed again by a clean stop), so a reader of that file can rely on every
 * address answering.
 */
import type { Pacing } from '../timing/wait.js';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { failureFields, type Logger } from '../common/log.js';
import { JsonHttpClient } from '../common/http-client.js';
import { DEFAULT_ADMIN_UUID } from '../common/triton-defaults.js';
import { DevBooter } from './booter/service.js';
import { CnapiService } from './cnapi/index.js';
import { FwapiService } from './fwapi/index.js';
import { ImgapiService } from './imgapi/index.js';
import { NapiService } from './napi/index.js';
import { PapiService } from './papi/index.js';
import { SapiService } from './sapi/index.js';
import { VmapiService } from './vmapi/index.js';
import { HeadnodeStore } from './store.js';

export interface HeadnodePorts {
  cnapi?: number;
  vmapi?: number;
  napi?: number;
  imgapi?: number;
  sapi?: number;
  papi?: number;
  fwapi?: number;
  /** FWAPI's update stream (FWAPI's own: 2020); 0 or absent: any free port. */
  fwapiFast?: number;
  /** The booter's DHCP (UDP) port. */
  booter?: number;
}

export interface HeadnodeUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi: string;
  sapi: string;
  papi: string;
  fwapi: string;
  /** FWAPI's update stream, `tcp://host:port`. */
  fwapiFast: string;
}

export interface HeadnodeOptions {
  dataDir: string;
  log: Logger;
  /** Listen address of all six services; loopback unless told otherwise. */
  host?: string;
  /** Ports per service; 0 (any free port) when absent. */
  ports?: HeadnodePorts;
  /** CNAPI's `datacenter_name` for new servers (and the `sdc` application's in SAPI). */
  datacenter?: string;
  /** The `sdc` application's `dns_domain` in SAPI. */
  dnsDomain?: string;
  /** The DC's UFDS admin user (owner of admin NICs and agent images). */
  adminUuid?: string;
  /** The headnode's platform (CNAPI's `default` server record boots it). */
  platform?: string;
  /** FWAPI's `pollInterval` (3 s): tests shorten it. */
  fwapiPollMs?: number;
  /** Test knobs for CNAPI's heartbeat reconciler (defaults: CNAPI's 5 s period, 11 s lifetime). */
  heartbeat?: { periodMs?: number; lifetimeMs?: number };
  /** How long the waitlist's activations and the workflows' steps take (the daemon's timing); absent: no time. */
  pacing?: Pacing;
  /** Run the booter subset (DHCP and boot files, src/headnode/booter); on unless false. */
  booter?: boolean;
}

/** Where the dev booter answers: DHCP on UDP, the boot files over HTTP. */
export interface BooterAddresses {
  dhcp: { ip: string; port: number };
  http: string;
}

/** What every headnode service offers the composition. */
interface Service {
  start(opts: { host: string; port: number }): Promise<void>;
  stop(): Promise<void>;
  readonly url: string;
}

/** The name of the file with the six addresses, in the data dir. */
export const HEADNODE_JSON = 'headnode.json';

export class Headnode {
  readonly store: HeadnodeStore;
  readonly napi: NapiService;
  readonly imgapi: ImgapiService;
  readonly sapi: SapiService;
  readonly papi: PapiService;
  readonly fwapi: FwapiService;
  /** FWAPI's calls to VMAPI. */
  private readonly http = new JsonHttpClient({ userAgent: 'fwapi/1.1.4' });
  private cnapiService: CnapiService | undefined;
  private vmapiService: VmapiService | undefined;
  private booterService: DevBooter | undefined;
  private readonly opts: HeadnodeOptions;
  private readonly log: Logger;
  /** Started services, in start order, for stop() and for unwinding a failed start. */
  private started: Service[] = [];
  private _urls: HeadnodeUrls | undefined;

  constructor(opts: HeadnodeOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: 'headnode' });
    this.store = new HeadnodeStore({ dataDir: opts.dataDir, log: this.log });
    const admin = opts.adminUuid ? { adminUuid: opts.adminUuid } : {};
    this.napi = new NapiService({ log: opts.log, store: this.store, ...admin });
    this.imgapi = new ImgapiService({ log: opts.log, store: this.store, ...admin });
    this.sapi = new SapiService({
      log: opts.log,
      store: this.store,
      ...admin,
      ...(opts.datacenter ? { datacenterName: opts.datacenter } : {}),
      ...(opts.dnsDomain ? { dnsDomain: opts.dnsDomain } : {}),
    });
    this.papi = new PapiService({ log: opts.log, store: this.store, ...admin });
    this.fwapi = new FwapiService({
      log: opts.log,
      store: this.store,
      http: this.http,
      serverId: `fwapi.${opts.datacenter ?? 'coal'}.${opts.dnsDomain ?? 'local'}`,
      ...(opts.fwapiPollMs !== undefined ? { pollIntervalMs: opts.fwapiPollMs } : {}),
      ...(opts.ports?.fwapiFast ? { fastPort: opts.ports.fwapiFast } : {}),
    });
  }

  get urls(): HeadnodeUrls {
    if (!this._urls) throw new Error('headnode is not started');
    return this._urls;
  }

  get cnapi(): CnapiService {
    if (!this.cnapiService) throw new Error('headnode is not started');
    return this.cnapiService;
  }

  get vmapi(): VmapiService {
    if (!this.vmapiService) throw new Error('headnode is not started');
    return this.vmapiService;
  }

  /** The booter subset, when it runs. */
  get booter(): DevBooter | undefined {
    return this.booterService;
  }

  /** Where the booter answers; undefined when it does not run. */
  get booterAddresses(): BooterAddresses | undefined {
    const b = this.booterService;
    return b ? { dhcp: b.dhcpAddress, http: b.httpUrl } : undefined;
  }

  /** The file the addresses are written to. */
  get headnodeJsonPath(): string {
    return path.join(this.opts.dataDir, HEADNODE_JSON);
  }

  async start(): Promise<HeadnodeUrls> {
    const host = this.opts.host ?? '127.0.0.1';
    const ports = this.opts.ports ?? {};
    try {
      await this.startOne(this.napi, host, ports.napi);
      await this.startOne(this.imgapi, host, ports.imgapi);
      await this.startOne(this.sapi, host, ports.sapi);
      await this.startOne(this.papi, host, ports.papi);
      await this.startOne(this.fwapi, host, ports.fwapi);

      const cnapi = new CnapiService({
        log: this.opts.log,
        store: this.store,
        napiUrl: this.napi.url,
        imgapiUrl: this.imgapi.url,
        ...(this.opts.datacenter ? { datacenter: this.opts.datacenter } : {}),
        ...(this.opts.heartbeat ? { heartbeat: this.opts.heartbeat } : {}),
        ...(this.opts.platform ? { platform: this.opts.platform } : {}),
        pacing: this.opts.pacing,
      });
      this.cnapiService = cnapi;
      await this.startOne(cnapi, host, ports.cnapi);

      const vmapi = new VmapiService({
        log: this.opts.log,
        store: this.store,
        cnapiUrl: cnapi.url,
        napiUrl: this.napi.url,
        imgapiUrl: this.imgapi.url,
        pacing: this.opts.pacing,
        papiUrl: this.papi.url,
        fwapiUrl: this.fwapi.url,
      });
      this.vmapiService = vmapi;
      await this.startOne(vmapi, host, ports.vmapi);
      cnapi.setPeers({ vmapi: vmapi.url });
      this.imgapi.setPeers({ vmapi: vmapi.url, cnapi: cnapi.url, napi: this.napi.url, workflow: vmapi.workflowApi });
      this.fwapi.setVmapi(vmapi.url);

      if (this.opts.booter !== false) {
        const booter = new DevBooter({
          log: this.opts.log,
          napiUrl: this.napi.url,
          cnapiUrl: cnapi.url,
          adminUuid: this.opts.adminUuid ?? DEFAULT_ADMIN_UUID,
        });
        this.booterService = booter;
        await this.startOne(booter, host, ports.booter);
      }

      this._urls = {
        cnapi: cnapi.url,
        vmapi: vmapi.url,
        napi: this.napi.url,
        imgapi: this.imgapi.url,
        sapi: this.sapi.url,
        papi: this.papi.url,
        fwapi: this.fwapi.url,
        fwapiFast: this.fwapi.fastAddress,
      };
      await fsp.mkdir(this.opts.dataDir, { recursive: true });
      const booter = this.booterAddresses;
      await writeFileDurable(this.headnodeJsonPath, `${JSON.stringify({ ...this._urls, ...(booter ? { booter } : {}) }, null, 2)}\n`);
      this.log.info({ urls: this._urls }, 'dev headnode listening');
      return this._urls;
    } catch (err) {
      await this.stop().catch((stopErr: unknown) => this.log.error(failureFields(stopErr), 'stopping after a failed start'));
      throw err;
    }
  }

  /** Stop every service (reverse start order) and remove headnode.json: nobody answers there now. */
  async stop(): Promise<void> {
    if (this._urls) await fsp.unlink(this.headnodeJsonPath).catch(() => undefined);
    const services = this.started.reverse();
    this.started = [];
    let firstError: unknown;
    for (const s of services) {
      try {
        await s.stop();
      } catch (err) {
        this.log.error(failureFields(err), 'stopping a headnode service failed');
        firstError ??= err;
      }
    }
    this.cnapiService = undefined;
    this.vmapiService = undefined;
    this.booterService = undefined;
    this._urls = undefined;
    this.http.close();
    if (firstError) throw firstError;
  }

  private async startOne(service: Service, host: string, port: number | undefined): Promise<void> {
    await service.start({ host, port: port ?? 0 });
    this.started.push(service);
  }
}
