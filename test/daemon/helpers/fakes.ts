/**
 * Small stand-ins for the parts other helpers build (the cn-agent task server, vmadm), so the
 * daemon's own behaviour can be tested in isolation. The fake cn-agent binds one real socket
 * per CN and answers every request with that CN's uuid, so tests can check that the address
 * a CN registers really reaches it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentAddress, MockCn } from '../../../src/mockcn/types.js';
import type { CnAgentHost, VmadmHost } from '../../../src/daemon/services.js';
import type { LoadOptions, Vm, VmEventListener, VmStore, VmSubscription } from '../../../src/vmadm/types.js';

export class FakeCnAgent implements CnAgentHost {
  readonly servers = new Map<string, http.Server>();
  tasksInFlight = 0;
  constructor(private readonly bindIp = '127.0.0.1') {}
  start(): void {}
  async stop(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((u) => this.detach(u)));
  }
  async attach(cn: MockCn): Promise<AgentAddress> {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const body = JSON.stringify({ server: cn.uuid, registered: cn.registered });
        res.writeHead(200, { 'content-type': 'application/json', server: 'Compute Node Agent' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, this.bindIp, resolve));
    this.servers.set(cn.uuid, server);
    return { ip: this.bindIp, port: (server.address() as AddressInfo).port };
  }
  async detach(uuid: string): Promise<void> {
    const s = this.servers.get(uuid);
    this.servers.delete(uuid);
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

/** An in-memory VmStore with just what the daemon and reporter read (list, get, size, rescan). */
export class FakeVmStore {
  readonly vms = new Map<string, Vm>();
  readonly listeners = new Set<VmEventListener>();
  rescans = 0;
  private seq = 0;
  constructor(readonly serverUuid: string) {}
  subscribe(listener: VmEventListener): VmSubscription {
    this.listeners.add(listener);
    return { ready: new Map(this.vms), unsubscribe: () => this.listeners.delete(listener) };
  }
  get size(): number {
    return this.vms.size;
  }
  get(uuid: string): Vm | undefined {
    return this.vms.get(uuid);
  }
  list(opts: LoadOptions = {}): Vm[] {
    return [...this.vms.values()].filter((vm) => opts.include_dni || !vm.do_not_inventory);
  }
  /** Add or replace a VM and tell subscribers, as the real store does after a write. */
  put(vm: Vm): void {
    const type = this.vms.has(vm.uuid) ? 'modify' : 'create';
    this.vms.set(vm.uuid, vm);
    for (const l of this.listeners) l({ type, zonename: vm.uuid, uuid: vm.uuid, vm, seq: ++this.seq, date: new Date().toISOString() });
  }
  async rescan(): Promise<void> {
    this.rescans++;
  }
}

export class FakeVmadm implements VmadmHost {
  readonly stores = new Map<string, FakeVmStore>();
  closed: string[] = [];
  async openServer(uuid: string): Promise<VmStore> {
    let s = this.stores.get(uuid);
    if (!s) {
      s = new FakeVmStore(uuid);
      this.stores.set(uuid, s);
    }
    return s as unknown as VmStore;
  }
  closeServer(uuid: string): void {
    this.closed.push(uuid);
  }
}

/** A minimal VM as vmadm's loaded form has it. */
export function fakeVm(uuid: string, overrides: Partial<Vm> = {}): Vm {
  return {
    uuid,
    brand: 'joyent-minimal',
    state: 'running',
    zone_state: 'running',
    owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
    max_physical_memory: 1024,
    quota: 25,
    cpu_cap: 100,
    last_modified: new Date().toISOString(),
    ...overrides,
  };
}

/** Poll `fn` until it returns a truthy value or `timeoutMs` passes (bounded). */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
