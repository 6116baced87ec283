/**
 * Small recording stand-ins for the peers of the dev headnode's CNAPI, for tests that run
 * before (or without) the real mock CNs and the real NAPI/IMGAPI:
 *
 * - FakeCnAgent: one HTTP listener that answers cn-agent's routes (POST /tasks, GET
 *   /history, POST /pause, POST /resume) and records every request with its headers;
 *   per-task answers can be scripted.
 * - FakePeers: NAPI's `POST /nic_tags` (Duplicate on the second create) and IMGAPI's
 *   `GET /images/:uuid`.
 *
 * Loopback only, port 0.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export type TaskAnswer = { status: number; body?: unknown; delayMs?: number };

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function send(res: http.ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}

abstract class Recorder {
  readonly requests: RecordedRequest[] = [];
  protected readonly server: http.Server;
  port = 0;

  constructor() {
    this.server = http.createServer((req, res) => {
      void readJson(req).then((body) => {
        const rec: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
        this.requests.push(rec);
        return this.handle(rec, res);
      });
    });
  }

  protected abstract handle(req: RecordedRequest, res: http.ServerResponse): void | Promise<void>;

  async start(host = '127.0.0.1'): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, host, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export class FakeCnAgent extends Recorder {
  /** Scripted answers by task name; default 200 `{}` plus `vm` for machine_* tasks. */
  readonly answers = new Map<string, TaskAnswer>();
  paused = false;
  history: unknown[] = [];
  /** With `stateful`, the VMs this fake CN holds (keyed by uuid), changed by the tasks. */
  readonly vms = new Map<string, Record<string, any>>();
  stateful = false;

  tasks(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/tasks'));
  }

  protected async handle(req: RecordedRequest, res: http.ServerResponse): Promise<void> {
    if (req.method === 'GET' && req.path === '/history') return send(res, 200, this.history);
    if (req.method === 'POST' && req.path === '/pause') {
      this.paused = true;
      return send(res, 204);
    }
    if (req.method === 'POST' && req.path === '/resume') {
      this.paused = false;
      return send(res, 204);
    }
    if (req.method === 'POST' && req.path.startsWith('/tasks')) {
      if (this.paused) {
        return send(res, 503, { code: 'ServiceUnavailable', message: 'CN Agent is not accepting tasks for maintenance' });
      }
      const b = (req.body ?? {}) as { task?: string; params?: Record<string, unknown> };
      const answer = this.answers.get(b.task ?? '');
      if (answer) {
        if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
        return send(res, answer.status, answer.body);
      }
      const p = b.params ?? {};
      if (this.stateful) {
        const r = this.runStateful(b.task ?? '', p);
        return send(res, r.status, r.body);
      }
      if (typeof b.task === 'string' && b.task.startsWith('machine_') && typeof p.uuid === 'string') {
        return send(res, 200, { vm: { uuid: p.uuid, state: 'running' } });
      }
      return send(res, 200, {});
    }
    return send(res, 404, { code: 'ResourceNotFound', message: `${req.path} does not exist` });
  }

  /** A tiny VM engine with the result shapes of the real tasks (`{vm}` or the VM itself). */
  private runStateful(task: string, p: Record<string, any>): { status: number; body: unknown } {
    const notFound = {
      status: 500,
      body: { error: `VM.load error: vmadm load ${p.uuid} failed: No such zone`, details: { restCode: 'VmNotFound' } },
    };
    const now = new Date().toISOString();
    const vm = this.vms.get(p.uuid);
    const touch = (v: Record<string, any>) => {
      v.last_modified = now;
      return { status: 200, body: { vm: structuredClone(v) } };
    };
    switch (task) {
      case 'image_ensure_present':
      case 'nop':
        return { status: 200, body: {} };
      case 'machine_create': {
        if (vm) return { status: 500, body: { error: `Machine ${p.uuid} exists.` } };
        const nics = (p.nics ?? []).map((n: Record<string, unknown>) => ({
          mac: n.mac, ip: n.ip, netmask: n.netmask, gateway: n.gateway, nic_tag: n.nic_tag,
          network_uuid: n.network_uuid, vlan_id: n.vlan_id, mtu: n.mtu, primary: n.primary,
        }));
        const created: Record<string, any> = {
          uuid: p.uuid, alias: p.alias, brand: p.brand, owner_uuid: p.owner_uuid, image_uuid: p.image_uuid,
          max_physical_memory: p.max_physical_memory, ram: p.ram, quota: p.quota, cpu_shares: p.cpu_shares,
          customer_metadata: p.customer_metadata ?? {}, internal_metadata: p.internal_metadata ?? {},
          tags: p.tags ?? {}, resolvers: p.resolvers ?? [], nics, server_uuid: p.server_uuid,
          state: p.autoboot === false ? 'stopped' : 'running', zone_state: 'running',
          create_timestamp: now, snapshots: [], autoboot: p.autoboot !== false,
        };
        this.vms.set(p.uuid, created);
        return touch(created);
      }
      case 'machine_load':
        return vm ? { status: 200, body: structuredClone(vm) } : notFound;
      default:
        break;
    }
    if (!vm) return notFound;
    switch (task) {
      case 'machine_boot':
      case 'machine_reboot':
        vm.state = 'running';
        vm.zone_state = 'running';
        return touch(vm);
      case 'machine_shutdown':
      case 'machine_kill':
        vm.state = 'stopped';
        vm.zone_state = 'installed';
        return touch(vm);
      case 'machine_update': {
        for (const k of ['customer_metadata', 'internal_metadata', 'tags']) {
          if (p[`set_${k}`]) Object.assign(vm[k], p[`set_${k}`]);
          for (const key of p[`remove_${k}`] ?? []) delete vm[k][key];
        }
        for (const k of ['alias', 'max_physical_memory', 'ram', 'quota', 'resolvers']) if (p[k] !== undefined) vm[k] = p[k];
        if (Array.isArray(p.add_nics)) {
          for (const n of p.add_nics) vm.nics.push({ mac: n.mac, ip: n.ip, nic_tag: n.nic_tag, network_uuid: n.network_uuid });
        }
        if (Array.isArray(p.remove_nics)) vm.nics = vm.nics.filter((n: { mac: string }) => !p.remove_nics.includes(n.mac));
        return touch(vm);
      }
      case 'machine_create_snapshot':
        vm.snapshots.push({ name: p.snapshot_name, created_at: now });
        return touch(vm);
      case 'machine_rollback_snapshot':
        if (!vm.snapshots.some((x: { name: string }) => x.name === p.snapshot_name)) {
          return { status: 500, body: { error: `snapshot ${p.snapshot_name} not found` } };
        }
        return touch(vm);
      case 'machine_delete_snapshot':
        vm.snapshots = vm.snapshots.filter((x: { name: string }) => x.name !== p.snapshot_name);
        return touch(vm);
      case 'machine_reprovision':
        vm.image_uuid = p.image_uuid;
        vm.state = 'running';
        return touch(vm);
      case 'machine_destroy':
        this.vms.delete(p.uuid);
        return { status: 200, body: {} };
      default:
        return { status: 404, body: { code: 'ResourceNotFound', message: `Unknown task, '${task}'` } };
    }
  }
}

export interface FakeNetwork {
  uuid: string;
  name: string;
  nic_tag: string;
  subnet: string;
  netmask: string;
  gateway: string;
  resolvers: string[];
  vlan_id: number;
  mtu: number;
  /** Host numbers still free (last octet). */
  free: number[];
  prefix: string;
}

export class FakePeers extends Recorder {
  readonly nicTags = new Set<string>();
  readonly images = new Map<string, Record<string, unknown>>();
  /** Make `POST /nic_tags` fail with this status (not Duplicate). */
  nicTagFailure: number | undefined;
  readonly networks = new Map<string, FakeNetwork>();
  readonly nics = new Map<string, Record<string, any>>();

  /** A /24 network `<prefix>.0/24` with hosts `first..last` free. */
  addNetwork(uuid: string, name: string, nicTag: string, prefix: string, first = 10, last = 250): FakeNetwork {
    const net: FakeNetwork = {
      uuid, name, nic_tag: nicTag, subnet: `${prefix}.0/24`, netmask: '255.255.255.0', gateway: `${prefix}.1`,
      resolvers: ['8.8.8.8'], vlan_id: 0, mtu: 1500, prefix,
      free: Array.from({ length: last - first + 1 }, (_, i) => first + i),
    };
    this.networks.set(uuid, net);
    return net;
  }

  private netJson(n: FakeNetwork) {
    const { free: _free, prefix: _prefix, ...rest } = n;
    return rest;
  }

  protected handle(req: RecordedRequest, res: http.ServerResponse): void {
    if (req.method === 'POST' && req.path === '/nic_tags') {
      if (this.nicTagFailure) return send(res, this.nicTagFailure, { code: 'InternalError', message: 'napi broke' });
      const name = (req.body as { name?: string } | undefined)?.name ?? '';
      if (this.nicTags.has(name)) {
        return send(res, 422, {
          code: 'InvalidParameters',
          message: 'Invalid parameters',
          errors: [{ field: 'name', code: 'Duplicate', message: 'Already exists' }],
        });
      }
      this.nicTags.add(name);
      return send(res, 200, { name, mtu: 1500 });
    }
    const url = new URL(req.path, 'http://x');
    if (req.method === 'GET' && url.pathname === '/networks') {
      const name = url.searchParams.get('name');
      return send(res, 200, [...this.networks.values()].filter((n) => !name || n.name === name).map((n) => this.netJson(n)));
    }
    let nm = /^\/networks\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && nm) {
      const net = this.networks.get(nm[1]!) ?? [...this.networks.values()].find((n) => n.name === nm![1]);
      return net ? send(res, 200, this.netJson(net)) : send(res, 404, { code: 'ResourceNotFound', message: 'network not found' });
    }
    nm = /^\/networks\/([^/]+)\/nics$/.exec(url.pathname);
    if (req.method === 'POST' && nm) {
      const net = this.networks.get(nm[1]!);
      if (!net) return send(res, 404, { code: 'ResourceNotFound', message: 'network not found' });
      const b = (req.body ?? {}) as Record<string, any>;
      if (!['server', 'zone', 'other'].includes(b.belongs_to_type)) {
        return send(res, 422, { code: 'InvalidParameters', message: 'Invalid parameters', errors: [{ field: 'belongs_to_type', code: 'InvalidParameter', message: 'invalid' }] });
      }
      const host = net.free.shift();
      if (host === undefined) {
        return send(res, 507, { code: 'SubnetFull', message: 'No more free IPs available' });
      }
      const mac = `90:b8:d0:${[1, 2, 3].map(() => Math.floor(Math.random() * 256).toString(16).padStart(2, '0')).join(':')}`;
      const nic = {
        mac, ip: `${net.prefix}.${host}`, netmask: net.netmask, gateway: net.gateway, nic_tag: net.nic_tag,
        vlan_id: net.vlan_id, mtu: net.mtu, network_uuid: net.uuid, resolvers: net.resolvers,
        primary: b.primary === true, belongs_to_uuid: b.belongs_to_uuid, belongs_to_type: b.belongs_to_type,
        owner_uuid: b.owner_uuid, cn_uuid: b.cn_uuid, state: b.state ?? 'running',
      };
      this.nics.set(mac.replace(/:/g, ''), nic);
      return send(res, 200, nic);
    }
    if (req.method === 'GET' && url.pathname === '/nics') {
      const q = Object.fromEntries(url.searchParams);
      return send(res, 200, [...this.nics.values()].filter((n) => Object.entries(q).every(([k, v]) => String(n[k]) === v)));
    }
    nm = /^\/nics\/([0-9a-f:]+)$/.exec(url.pathname);
    if (nm) {
      const key = nm[1]!.replace(/:/g, '');
      const nic = this.nics.get(key);
      if (!nic) return send(res, 404, { code: 'ResourceNotFound', message: 'nic not found' });
      if (req.method === 'GET') return send(res, 200, nic);
      if (req.method === 'DELETE') {
        this.nics.delete(key);
        const net = this.networks.get(nic.network_uuid);
        net?.free.push(Number(String(nic.ip).split('.').pop()));
        return send(res, 204);
      }
      if (req.method === 'PUT') {
        Object.assign(nic, req.body);
        return send(res, 200, nic);
      }
    }
    const m = /^\/images\/([^/?]+)$/.exec(req.path);
    if (req.method === 'GET' && m) {
      const img = this.images.get(m[1]!);
      return img ? send(res, 200, img) : send(res, 404, { code: 'ResourceNotFound', message: 'image not found' });
    }
    return send(res, 404, { code: 'ResourceNotFound', message: `${req.path} does not exist` });
  }
}
