/**
 * `mockcloud mirror load CAPTURE`: a capture (format.ts) into a running daemon and its
 * headnode (the embedded dev headnode or a real test Triton), record by record as the file is
 * read:
 *
 *   nic_tag       NAPI POST /nic_tags, unless NAPI has the name;
 *   network       NAPI POST /networks with the captured uuid, unless NAPI has it; the captured
 *                 admin network is the loading DC's own admin network; a name NAPI already
 *                 gives another network gets `-<first 8 of the uuid>`; fabrics are not made;
 *   network_pool  NAPI POST /network_pools, likewise;
 *   image         IMGAPI AdminImportImage, a placeholder file (an empty gzip) and activation,
 *                 unless IMGAPI has the uuid; an image whose origin comes later waits for it;
 *   package       PAPI POST /packages (`skip_validation`: as captured, even what a DC's
 *                 first boot stored unchecked) unless PAPI has the uuid; the daemon's dev
 *                 headnode's PAPI unless another is given;
 *   server        the daemon's control API POST /servers {count: 1, uuid, hostname, hardware},
 *                 unless the daemon has the uuid (GET /servers/:uuid); the daemon stages the
 *                 CN's dir and publishes it whole (src/mockcn/server-dir.ts): never half a CN;
 *   vm            its NICs from NAPI first, as VMAPI's provision makes them (the captured MAC
 *                 and IP on the loaded network; another IP when that one is taken), then
 *                 cn-agent's machine_create on the CN, as CNAPI sends it: vm-agent and
 *                 net-agent then report the VM to VMAPI and NAPI as any other. A VM the CN has
 *                 already is left alone ("Machine <uuid> exists.");
 *   nic           counted: VM NICs come with their VMs, the CNs' own with the CNs.
 *
 * Everything is checked by uuid (or name) before it is made, so a second load changes nothing,
 * and a load interrupted anywhere (Ctrl-C, kill -9, the daemon killed) is finished by running
 * it again. `--remap-uuids` gives servers, VMs and VM NIC MACs new identities derived from the
 * old ones and a seed, so the same capture loads the same way again.
 */
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { MockcloudError } from '../common/errors.js';
import type { HttpResponse, JsonHttpClient } from '../common/http-client.js';
import { retryWithBackoff } from '../common/retry.js';
import { isUuid, repeatableUuidFromHex } from '../common/uuid.js';
import { ALL_BRANDS } from '../vmadm/properties.js';
import { readCapture, RECORD_KIND_NAMES, RECORD_KINDS, verifyCapture, type CaptureHeader, type CaptureLimits, type Obj, type RecordKind } from './format.js';
import { hardwareOf } from './hardware.js';
import { isAdminNetwork } from './redact.js';

/** The daemon's control API (the CLI's DaemonClient fits). */
export interface ControlApi {
  request<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: T }>;
}

export interface LoadOptions {
  file: string;
  control: ControlApi;
  http: JsonHttpClient;
  urls: { cnapi?: string; vmapi?: string; napi: string; imgapi?: string; papi?: string };
  remapUuids?: boolean;
  /** What remapped identities are derived with (default "mirror"). */
  remapSeed?: string;
  /** CNs created at once (default 16) and VMs (default 64). */
  serverConcurrency?: number;
  vmConcurrency?: number;
  /** How long a new CN may take to take tasks (registered with CNAPI), ms (default 60 s). */
  registerTimeoutMs?: number;
  onProgress?: (p: { kind: RecordKind; done: number; total: number }) => void;
  signal?: AbortSignal;
  /** How large a line, and the whole file decompressed, may be (format.ts's defaults). */
  limits?: Partial<CaptureLimits>;
}

export type Outcome = 'created' | 'existing' | 'failed' | 'skipped';

export interface LoadReport {
  header: CaptureHeader;
  /** Per kind: how many were created, were there already, failed, were skipped on purpose. */
  counts: Record<RecordKind, Record<Outcome, number>>;
  /** What could not be reproduced as captured: one line per kind of loss, with a count and examples. */
  notReproduced: { what: string; count: number; examples: string[] }[];
  /** Seconds each kind took, from its first record to its last one done (the rates of a load). */
  seconds: Partial<Record<RecordKind, number>>;
  /** Failures, the first few of each kind. */
  errors: { kind: RecordKind; id: string; message: string }[];
  durationMs: number;
}

const MAX_EXAMPLES = 3;
const MAX_ERRORS_PER_KIND = 20;

export async function load(opts: LoadOptions): Promise<LoadReport> {
  return new Loader(opts).run();
}

interface LoadedServer {
  uuid: string;
  agentUrl: string;
}

class Loader {
  private readonly counts = Object.fromEntries(RECORD_KINDS.map((k) => [k, { created: 0, existing: 0, failed: 0, skipped: 0 }])) as LoadReport['counts'];
  private readonly lost = new Map<string, { count: number; examples: string[] }>();
  private readonly errors: LoadReport['errors'] = [];
  /** Captured network uuid → the loading DC's. */
  private readonly networks = new Map<string, string>();
  /** Captured server uuid → the CN loaded for it. */
  private readonly servers = new Map<string, LoadedServer>();
  private readonly pendingImages: Obj[] = [];
  /** Captured VM uuid → the VM made (or found) for it: whose NICs the nic records check. */
  private readonly loadedVms = new Map<string, string>();
  /** Captured MACs of the VM NICs this load asked NAPI for (or found there): the ones to check. */
  private readonly vmMacs = new Set<string>();
  /** Captured MACs of VM NICs left out on purpose (noted already). */
  private readonly leftOutMacs = new Set<string>();
  private adminNetwork: string | undefined;
  private readonly seed: string;

  constructor(private readonly o: LoadOptions) {
    this.seed = o.remapSeed ?? 'mirror';
  }

  async run(): Promise<LoadReport> {
    const started = Date.now();
    // A file cut short or damaged is refused before anything is made.
    const header = await verifyCapture(this.o.file, this.o.limits);
    let pool = new Pool(1);
    let kind: RecordKind | undefined;
    const done = Object.fromEntries(RECORD_KINDS.map((k) => [k, 0])) as Record<RecordKind, number>;
    const seconds: LoadReport['seconds'] = {};
    let kindStarted = 0;
    const endKind = async (): Promise<void> => {
      await pool.drain();
      if (kind === 'image') await this.flushImages();
      if (kind) seconds[kind] = Math.round(performance.now() - kindStarted) / 1000;
    };
    for await (const item of readCapture(this.o.file, this.o.limits)) {
      if (item.kind === 'header') continue;
      this.checkAborted();
      if (item.kind !== kind) {
        // One kind at a time: everything of the kind before is done (VMs need their CN).
        await endKind();
        kind = item.kind;
        kindStarted = performance.now();
        pool = new Pool(kind === 'server' ? (this.o.serverConcurrency ?? 16) : kind === 'vm' ? (this.o.vmConcurrency ?? 64) : 8);
      }
      const k = item.kind;
      const data = item.data;
      await pool.run(async () => {
        const outcome = await this.one(k, data).catch((err: unknown) => {
          const id = String(data.uuid ?? data.name ?? data.mac ?? '?');
          // The loading DC said no to what it was asked (a 4xx): a re-run would not change
          // that; it is something the DC cannot reproduce, not a failure.
          if (err instanceof Refused) {
            this.note(`${RECORD_KIND_NAMES[k]} the loading DC refused`, `${id}: ${err.message}`);
            return 'skipped' as const;
          }
          this.fail(k, id, err);
          return 'failed' as const;
        });
        if (outcome) this.counts[k][outcome]++;
        done[k]++;
        this.o.onProgress?.({ kind: k, done: done[k], total: header.counts[k] });
      });
    }
    await endKind();
    return {
      header,
      counts: this.counts,
      notReproduced: [...this.lost.entries()].map(([what, v]) => ({ what, count: v.count, examples: v.examples })),
      seconds,
      errors: this.errors,
      durationMs: Date.now() - started,
    };
  }

  private checkAborted(): void {
    if (this.o.signal?.aborted) throw new MockcloudError('ServiceUnavailable', 'load interrupted: run it again to finish');
  }

  private note(what: string, example?: string): void {
    const v = this.lost.get(what) ?? { count: 0, examples: [] };
    v.count++;
    if (example !== undefined && v.examples.length < MAX_EXAMPLES) v.examples.push(example);
    this.lost.set(what, v);
  }

  private fail(kind: RecordKind, id: string, err: unknown): void {
    if (this.errors.filter((e) => e.kind === kind).length < MAX_ERRORS_PER_KIND) {
      this.errors.push({ kind, id, message: (err as Error)?.message ?? String(err) });
    }
  }

  private one(kind: RecordKind, data: Obj): Promise<Outcome | undefined> {
    switch (kind) {
      case 'nic_tag':
        return this.nicTag(data);
      case 'network':
        return this.network(data);
      case 'network_pool':
        return this.networkPool(data);
      case 'image':
        return this.image(data);
      case 'package':
        return this.package(data);
      case 'server':
        return this.server(data);
      case 'vm':
        return this.vm(data);
      case 'nic':
        return this.nic(data);
    }
  }

  // ---- HTTP

  private async call(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown): Promise<HttpResponse> {
    return retryWithBackoff(
      async () => {
        const res = await this.o.http.request({ method, url, ...(body === undefined ? {} : { body }), timeoutMs: 60_000 });
        if (res.statusCode >= 500) throw httpError(method, url, res);
        return res;
      },
      { attempts: 4, minDelayMs: 200, maxDelayMs: 3000, stopped: () => this.o.signal?.aborted === true },
    );
  }

  private async ok(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown): Promise<Obj> {
    const res = await this.call(method, url, body);
    if (res.statusCode >= 300) throw httpError(method, url, res);
    return res.body as Obj;
  }

  private async exists(url: string): Promise<Obj | undefined> {
    const res = await this.call('GET', url);
    if (res.statusCode === 404) return undefined;
    if (res.statusCode >= 300) throw httpError('GET', url, res);
    return res.body as Obj;
  }

  // ---- NAPI

  private async nicTag(t: Obj): Promise<Outcome> {
    const name = String(t.name);
    if (await this.exists(`${this.o.urls.napi}/nic_tags/${encodeURIComponent(name)}`)) return 'existing';
    await this.ok('POST', `${this.o.urls.napi}/nic_tags`, { name, ...(typeof t.mtu === 'number' ? { mtu: t.mtu } : {}) });
    return 'created';
  }

  private async adminNetworkUuid(): Promise<string> {
    if (!this.adminNetwork) this.adminNetwork = String((await this.ok('GET', `${this.o.urls.napi}/networks/admin`)).uuid);
    return this.adminNetwork;
  }

  private async network(n: Obj): Promise<Outcome> {
    const uuid = String(n.uuid);
    if (isAdminNetwork(n)) {
      this.networks.set(uuid, await this.adminNetworkUuid());
      return 'existing';
    }
    if (await this.exists(`${this.o.urls.napi}/networks/${uuid}`)) {
      this.networks.set(uuid, uuid);
      return 'existing';
    }
    if (n.fabric === true) {
      this.note('fabric networks (and their VMs\' NICs)', uuid);
      return 'skipped';
    }
    const body: Obj = { uuid };
    for (const k of ['name', 'nic_tag', 'vlan_id', 'subnet', 'provision_start_ip', 'provision_end_ip', 'gateway', 'resolvers', 'routes', 'mtu', 'owner_uuids', 'description']) {
      if (n[k] !== undefined && n[k] !== null) body[k] = n[k];
    }
    if (Array.isArray(body.owner_uuids) && body.owner_uuids.length === 0) delete body.owner_uuids;
    if (body.routes && typeof body.routes === 'object' && Object.keys(body.routes).length === 0) delete body.routes;
    const taken = await this.call('GET', `${this.o.urls.napi}/networks?name=${encodeURIComponent(String(n.name))}`);
    if (Array.isArray(taken.body) && taken.body.length > 0) {
      body.name = `${String(n.name)}-${uuid.slice(0, 8)}`;
      this.note('network names taken in the loading DC (loaded as <name>-<uuid prefix>)', `${String(n.name)} → ${String(body.name)}`);
    }
    await this.ok('POST', `${this.o.urls.napi}/networks`, body);
    this.networks.set(uuid, uuid);
    return 'created';
  }

  private async networkPool(p: Obj): Promise<Outcome> {
    const uuid = String(p.uuid);
    if (await this.exists(`${this.o.urls.napi}/network_pools/${uuid}`)) return 'existing';
    const networks = (Array.isArray(p.networks) ? p.networks : []).map((u) => this.networks.get(String(u))).filter((u): u is string => u !== undefined);
    if (networks.length === 0) {
      this.note('network pools none of whose networks were loaded', uuid);
      return 'skipped';
    }
    const body: Obj = { uuid, name: p.name, networks: [...new Set(networks)] };
    if (Array.isArray(p.owner_uuids) && p.owner_uuids.length > 0) body.owner_uuids = p.owner_uuids;
    if (typeof p.description === 'string') body.description = p.description;
    const taken = await this.call('GET', `${this.o.urls.napi}/network_pools?name=${encodeURIComponent(String(p.name))}`);
    if (Array.isArray(taken.body) && taken.body.length > 0) {
      body.name = `${String(p.name)}-${uuid.slice(0, 8)}`;
      this.note('network pool names taken in the loading DC (loaded as <name>-<uuid prefix>)', `${String(p.name)} → ${String(body.name)}`);
    }
    await this.ok('POST', `${this.o.urls.napi}/network_pools`, body);
    return 'created';
  }

  // ---- IMGAPI, PAPI

  private async image(m: Obj): Promise<Outcome | undefined> {
    const imgapi = this.o.urls.imgapi;
    if (!imgapi) {
      this.note('images (no IMGAPI in the loading DC)');
      return 'skipped';
    }
    const found = await this.exists(`${imgapi}/images/${String(m.uuid)}`);
    // Imported by an earlier load that was cut off before its file and activation: finished here,
    // if it is that image (its owner, name and version); an upload of someone else's is left alone.
    const unfinished = found?.state === 'unactivated' && String(m.state ?? 'active') !== 'unactivated';
    if (unfinished && (found.owner !== m.owner || found.name !== m.name || found.version !== m.version)) {
      this.note("images whose uuid the loading DC gives another, unactivated image (left alone)", String(m.uuid));
      return 'skipped';
    }
    if (found && !unfinished) return 'existing';
    if (!found && typeof m.origin === 'string' && !(await this.exists(`${imgapi}/images/${m.origin}`))) {
      // Its origin may come later in the capture: tried again once every image was read.
      this.pendingImages.push(m);
      return undefined;
    }
    await this.importImage(m, found !== undefined);
    return found ? 'existing' : 'created';
  }

  private async flushImages(): Promise<void> {
    for (let round = 0; round < 8 && this.pendingImages.length > 0; round++) {
      const waiting = this.pendingImages.splice(0);
      for (const m of waiting) {
        const outcome = await this.image(m).catch((err: unknown) => {
          this.fail('image', String(m.uuid), err);
          return 'failed' as const;
        });
        if (outcome) this.counts.image[outcome]++;
      }
    }
    for (const m of this.pendingImages.splice(0)) {
      this.note('images whose origin image is in neither the capture nor IMGAPI', String(m.uuid));
      this.counts.image.skipped++;
    }
  }

  /** Import (unless `imported` by an earlier, interrupted load), then the file and the state. */
  private async importImage(m: Obj, imported: boolean): Promise<void> {
    const imgapi = this.o.urls.imgapi!;
    const uuid = String(m.uuid);
    const manifest: Obj = { ...m };
    for (const k of ['files', 'state', 'published_at', 'channels']) delete manifest[k];
    if (!imported) await this.ok('POST', `${imgapi}/images/${uuid}?action=import`, manifest);
    const state = String(m.state ?? 'active');
    if (state === 'unactivated') return;
    const file = await this.call('PUT', `${imgapi}/images/${uuid}/file?compression=gzip`, EMPTY_GZIP);
    if (file.statusCode >= 300 && (file.body as Obj | undefined)?.code !== 'ImageFilesImmutable') throw httpError('PUT', `${imgapi}/images/${uuid}/file`, file);
    await this.ok('POST', `${imgapi}/images/${uuid}?action=activate`);
    this.note('image files (placeholders: an empty gzip file each)');
    if (state === 'disabled') await this.ok('POST', `${imgapi}/images/${uuid}?action=disable`).catch(() => this.note('disabled images (loaded active)', uuid));
  }

  private async package(p: Obj): Promise<Outcome> {
    const papi = this.o.urls.papi;
    if (!papi) {
      this.note('packages (no PAPI in the loading DC: give --papi-url)');
      return 'skipped';
    }
    if (await this.exists(`${papi}/packages/${String(p.uuid)}`)) return 'existing';
    const body: Obj = { ...p, skip_validation: true };
    delete body.created_at;
    delete body.updated_at;
    await this.ok('POST', `${papi}/packages`, body);
    return 'created';
  }

  // ---- servers

  private remap(kind: string, uuid: string): string {
    if (!this.o.remapUuids) return uuid;
    return repeatableUuidFromHex(createHash('sha256').update(`${this.seed}\0${kind}\0${uuid.toLowerCase()}`).digest('hex'));
  }

  private remapMac(mac: string): string {
    if (!this.o.remapUuids) return mac;
    const h = createHash('sha256').update(`${this.seed}\0mac\0${mac.toLowerCase()}`).digest();
    // Locally administered, unicast.
    const bytes = [(h[0]! & 0xfc) | 0x02, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!];
    return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
  }

  private async server(s: Obj): Promise<Outcome> {
    const captured = String(s.uuid);
    const si = (s.sysinfo ?? {}) as Obj;
    if (si['Headnode ID'] !== undefined) {
      this.note("the DC's headnode server (the loading DC has its own; VMs on it are not loaded)", captured);
      return 'skipped';
    }
    const uuid = this.remap('server', captured);
    const have = await this.o.control.request<Obj>('GET', `/servers/${uuid}`);
    if (have.status === 200) {
      this.servers.set(captured, { uuid, agentUrl: agentUrlOf(have.body) });
      return 'existing';
    }
    const { hardware, lost } = hardwareOf(s);
    for (const l of lost) this.note(`server hardware: ${l}`, captured);
    const body: Obj = { count: 1, uuid, hardware };
    const hostname = typeof s.hostname === 'string' ? s.hostname : si.Hostname;
    if (typeof hostname === 'string' && /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(hostname)) body.hostname = hostname;
    else this.note('server hostnames that are no valid nodename (a drawn one instead)', String(hostname));
    const deadline = Date.now() + (this.o.registerTimeoutMs ?? 60_000);
    for (;;) {
      const res = await this.o.control.request<Obj>('POST', '/servers', body);
      const created = (res.body?.created as Obj[] | undefined)?.[0];
      if (res.status === 200 && created) {
        this.servers.set(captured, { uuid, agentUrl: agentUrlOf(created) });
        return 'created';
      }
      // Being created by an earlier load the daemon is still finishing: wait for it.
      if (res.status === 409 && /already (exists|being created)/.test(String(res.body?.message)) && Date.now() < deadline) {
        await sleep(250);
        const again = await this.o.control.request<Obj>('GET', `/servers/${uuid}`);
        if (again.status === 200) {
          this.servers.set(captured, { uuid, agentUrl: agentUrlOf(again.body) });
          return 'existing';
        }
        continue;
      }
      const b = res.body as { code?: string; message?: string } | undefined;
      const message = `the daemon could not create server ${uuid}: ${b?.message ?? `HTTP ${res.status}`}`;
      if (res.status >= 400 && res.status < 500) throw new Refused(message);
      throw new MockcloudError('BadGateway', message);
    }
  }

  // ---- VMs

  private async vm(vm: Obj): Promise<Outcome> {
    const captured = String(vm.uuid);
    if (!isUuid(vm.uuid)) {
      this.note('VMs whose uuid is not a UUID (vmadm takes none; not loaded)', JSON.stringify(vm.uuid).slice(0, 80));
      return 'skipped';
    }
    const server = this.servers.get(String(vm.server_uuid));
    if (!server) {
      this.note('VMs whose server was not loaded', captured);
      return 'skipped';
    }
    const brand = typeof vm.brand === 'string' ? vm.brand : 'joyent';
    if (!(ALL_BRANDS as readonly string[]).includes(brand)) {
      this.note(`VMs of brand ${brand} (the mock CNs' vmadm has none)`, captured);
      return 'skipped';
    }
    const state = String(vm.state);
    if (state === 'destroyed' || state === 'failed') {
      this.note(`${state} VMs (not made)`, captured);
      return 'skipped';
    }
    const uuid = this.remap('vm', captured);
    if (state !== 'running' && state !== 'stopped') this.note(`VMs in state ${state} (loaded stopped)`, captured);
    const payload = createPayload(vm, uuid);
    payload.autoboot = state === 'running';
    const nics: Obj[] = [];
    for (const nic of Array.isArray(vm.nics) ? (vm.nics as Obj[]) : []) {
      const made = await this.vmNic(nic, uuid, server.uuid, String(vm.owner_uuid ?? ''));
      if (made) nics.push(made);
    }
    payload.nics = nics;
    const res = await this.task(server, 'machine_create', payload);
    if (res.statusCode !== 200) {
      const message = taskError(res);
      if (/Machine \S+ exists/.test(message)) {
        this.loadedVms.set(captured, uuid);
        return 'existing';
      }
      // vmadm refused the VM as captured: a load run again sends the same and is refused again.
      if (res.statusCode < 500 || VMADM_REFUSAL.test(message)) throw new Refused(`machine_create of ${uuid} on ${server.uuid}: ${message}`);
      throw new MockcloudError('BadGateway', `machine_create of ${uuid} on ${server.uuid}: ${message}`);
    }
    // vmadm stops a VM by clearing autoboot: a captured VM whose autoboot says otherwise gets it.
    if (typeof vm.autoboot === 'boolean' && vm.autoboot !== payload.autoboot) {
      const upd = await this.task(server, 'machine_update', { uuid, autoboot: vm.autoboot });
      if (upd.statusCode !== 200) this.note('VM autoboot (machine_update failed)', `${uuid}: ${taskError(upd)}`);
    }
    this.loadedVms.set(captured, uuid);
    return 'created';
  }

  /**
   * A VM's NIC in NAPI before the VM is made, as VMAPI's provision makes it: the captured MAC
   * and IP on the loaded network, owned by the VM. Already there for this VM (an earlier load):
   * used as it is. The IP taken: NAPI gives another. The admin network: NAPI gives the IP (the
   * loading DC's admin network is not the captured one).
   */
  private async vmNic(nic: Obj, vm: string, server: string, owner: string): Promise<Obj | undefined> {
    const network = this.networks.get(String(nic.network_uuid));
    if (!network) {
      this.note('VM NICs on networks not loaded (dropped)', `${vm} ${String(nic.mac)}`);
      this.leftOutMacs.add(String(nic.mac));
      return undefined;
    }
    const mac = this.remapMac(String(nic.mac));
    const napi = this.o.urls.napi;
    const body: Obj = { mac, belongs_to_uuid: vm, belongs_to_type: 'zone', owner_uuid: owner || undefined, cn_uuid: server, check_owner: false };
    for (const k of ['primary', 'allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic', 'allow_unfiltered_promisc']) {
      if (typeof nic[k] === 'boolean') body[k] = nic[k];
    }
    if (network === this.adminNetwork) {
      this.note("VM NICs on the admin network (an address of the loading DC's admin network)", `${vm} ${String(nic.ip)}`);
    } else if (typeof nic.ip === 'string') {
      body.ip = nic.ip;
    }
    // Asked for at once (one round trip on a fresh load); a MAC NAPI has already is looked at.
    const provision = `${napi}/networks/${network}/nics`;
    let res = await this.call('POST', provision, body);
    if (res.statusCode >= 400 && res.statusCode < 500) {
      // Refused: NAPI may have the MAC already (its answer names the MAC, the IP or both).
      const have = await this.exists(`${napi}/nics/${mac.replace(/:/g, '')}`);
      if (have && have.belongs_to_uuid === vm) {
        // An earlier, interrupted load made it for this VM.
        res = { statusCode: 200, headers: {}, body: have };
      } else if (have || isDuplicate(res.body, 'mac')) {
        this.note('VM NICs whose MAC NAPI gives to something else (dropped; try --remap-uuids)', `${vm} ${mac}`);
        this.leftOutMacs.add(String(nic.mac));
        return undefined;
      }
    }
    if (res.statusCode >= 300 && body.ip !== undefined && isDuplicate(res.body, 'ip')) {
      this.note('VM IPs taken in the loading DC (another one given)', `${vm} ${String(body.ip)}`);
      delete body.ip;
      res = await this.call('POST', provision, body);
    }
    if (res.statusCode >= 300) throw httpError('POST', provision, res);
    const napiNic = res.body as Obj;
    this.vmMacs.add(String(nic.mac));
    const out: Obj = {};
    for (const k of ['interface', 'model', 'primary', 'mtu', 'allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic', 'allow_unfiltered_promisc']) {
      if (nic[k] !== undefined) out[k] = nic[k];
    }
    for (const k of ['mac', 'ip', 'netmask', 'gateway', 'nic_tag', 'vlan_id', 'network_uuid', 'mtu', 'resolvers', 'routes']) {
      if (napiNic[k] !== undefined) out[k] = napiNic[k];
    }
    out.mac = mac;
    return out;
  }

  /** POST /tasks on the CN, as CNAPI does; a CN not yet registered with CNAPI answers 404: waited for. */
  private async task(server: LoadedServer, task: string, params: Obj): Promise<HttpResponse> {
    const deadline = Date.now() + (this.o.registerTimeoutMs ?? 60_000);
    for (;;) {
      const res = await this.o.http.request({
        method: 'POST',
        url: `${server.agentUrl}/tasks`,
        headers: { 'x-server-uuid': server.uuid },
        body: { task, params },
        timeoutMs: 120_000,
      });
      if ((res.statusCode === 404 && res.body === undefined) || res.statusCode === 503) {
        if (Date.now() > deadline) throw new MockcloudError('BadGateway', `server ${server.uuid} takes no tasks (not registered with CNAPI, or paused)`);
        this.checkAborted();
        await sleep(200);
        continue;
      }
      return res;
    }
  }

  /**
   * A captured NIC. A VM's, of a VM this load made or found: checked in NAPI (made with its VM;
   * missing means net-agent and the load's own NIC did not get there: a failure a re-run
   * mends, as it asks NAPI for the VM's NICs again). Others are not made.
   */
  private async nic(n: Obj): Promise<Outcome> {
    if (n.belongs_to_type !== 'zone') {
      this.note("NICs of servers and other owners (the loaded CNs' admin NICs are the loading DC's own; others are not made)", String(n.mac));
      return 'skipped';
    }
    const vm = this.loadedVms.get(String(n.belongs_to_uuid));
    // Its VM was not loaded, or the NIC was left out (both noted already).
    if (!vm) return 'skipped';
    if (!this.vmMacs.has(String(n.mac))) {
      if (!this.leftOutMacs.has(String(n.mac))) this.note("NICs NAPI gave a VM that VMAPI's VM does not list (not made)", `${vm} ${String(n.mac)}`);
      return 'skipped';
    }
    const mac = this.remapMac(String(n.mac));
    const have = await this.exists(`${this.o.urls.napi}/nics/${mac.replace(/:/g, '')}`);
    if (have?.belongs_to_uuid === vm) return 'existing';
    throw new MockcloudError('BadGateway', `NAPI has no NIC ${mac} of VM ${vm} after the load`);
  }
}

/** vmadm's answers to a payload it will not take (src/vmadm/errors.ts, as vmadm words them). */
const VMADM_REFUSAL = /Invalid value\(s\) for|Invalid property|Invalid (brand|uuid|payload)|is not a valid|Unknown brand/i;

/** What VMAPI shows of a VM that vmadm create does not take (runtime state, derived paths). */
const NOT_CREATE_FIELDS = [
  'state', 'zone_state', 'server_uuid', 'last_modified', 'create_timestamp', 'destroyed', 'pid', 'zoneid', 'zonedid',
  'boot_timestamp', 'exit_status', 'exit_timestamp', 'platform_buildstamp', 'zonepath', 'zfs_filesystem', 'datasets',
  'snapshots', 'zpool', 'zonename', 'transition_expire', 'transition_to', 'free_space', 'nics',
];

function createPayload(vm: Obj, uuid: string): Obj {
  const p: Obj = {};
  for (const [k, v] of Object.entries(vm)) {
    if (NOT_CREATE_FIELDS.includes(k) || v === null) continue;
    p[k] = v;
  }
  p.uuid = uuid;
  if (Array.isArray(vm.disks)) {
    p.disks = (vm.disks as Obj[]).map((d) => {
      const out: Obj = { ...d };
      for (const k of ['path', 'zfs_filesystem', 'zpool']) delete out[k];
      return out;
    });
  }
  // VMAPI's `ram` is max_physical_memory for a zone; vmadm takes it for HVM brands only.
  if (p.brand !== 'kvm' && p.brand !== 'bhyve') delete p.ram;
  return p;
}

function agentUrlOf(server: Obj): string {
  const a = server.agentAddress as { ip?: string; port?: number } | null | undefined;
  if (!a?.ip || !a.port) throw new MockcloudError('BadGateway', `the daemon gives no agent address for server ${String(server.uuid)}`);
  return `http://${a.ip}:${a.port}`;
}

/** NAPI's InvalidParameters for a MAC another NIC has (`Duplicate`) or an IP in use (`UsedBy`, sdc-napi errors.usedByParam). */
function isDuplicate(body: unknown, field: 'mac' | 'ip'): boolean {
  const errs = (body as { errors?: { field?: string; code?: string }[] } | undefined)?.errors;
  return Array.isArray(errs) && errs.some((e) => e.field === field && e.code === (field === 'mac' ? 'Duplicate' : 'UsedBy'));
}

function taskError(res: HttpResponse): string {
  const b = res.body as { error?: unknown; message?: unknown } | string | undefined;
  if (typeof b === 'string') return b;
  const e = b?.error ?? b?.message;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as Obj).message === 'string') return String((e as Obj).message);
  return `HTTP ${res.statusCode} ${JSON.stringify(b)}`;
}

/** A 4xx of the loading DC: it will not take what it was given (see Loader.run). */
class Refused extends MockcloudError {
  constructor(message: string) {
    super('BadGateway', message);
  }
}

function httpError(method: string, url: string, res: HttpResponse): MockcloudError {
  const b = res.body as { code?: string; message?: string; errors?: { field?: string; message?: string }[] } | undefined;
  const fields = Array.isArray(b?.errors) ? ` (${b.errors.map((e) => `${e.field}: ${e.message}`).join('; ')})` : '';
  const message = `${method} ${url}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}${fields}`;
  return res.statusCode >= 400 && res.statusCode < 500 ? new Refused(message) : new MockcloudError('BadGateway', message);
}


const EMPTY_GZIP = zlib.gzipSync(Buffer.alloc(0));

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** At most `limit` jobs at once; `run` waits for a free slot, so a reader is held back. */
class Pool {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly limit: number) {}

  async run(fn: () => Promise<void>): Promise<void> {
    while (this.running.size >= this.limit) await Promise.race(this.running);
    const p = fn().finally(() => this.running.delete(p));
    this.running.add(p);
  }

  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.race(this.running);
  }
}
