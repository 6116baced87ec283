/**
 * Shared fixtures for the vmadm tests: a temp data dir per test, an open server store,
 * and small payload builders. Everything lives under os.tmpdir() and is removed after.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { Vmadm } from '../../src/vmadm/index.js';
import type { Vm, VmEvent, VmPacer, VmStore } from '../../src/vmadm/types.js';

export const DC = 'coal';
export const PLATFORM = '20240425T000000Z';

export function identity(uuid: string) {
  return { UUID: uuid, 'Datacenter Name': DC, 'Live Image': PLATFORM };
}

export interface Fixture {
  root: string;
  serverUuid: string;
  vmadm: Vmadm;
  store: VmStore;
  vmsDir: string;
  fileOf(uuid: string): string;
  readFile(uuid: string): Promise<Record<string, unknown>>;
  /** Close the store and open the same data dir again. */
  reopen(opts?: { watch?: boolean }): Promise<VmStore>;
  cleanup(): Promise<void>;
}

export async function makeFixture(
  opts: { watch?: boolean; root?: string; serverUuid?: string; now?: () => number; pacer?: VmPacer } = {},
): Promise<Fixture> {
  const root = opts.root ?? (await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-vmadm-')));
  const serverUuid = opts.serverUuid ?? newUuid();
  const log = createQuietLogger('vmadm-test');
  const pacer = opts.pacer;
  const clock = { ...(opts.now ? { now: opts.now } : {}), ...(pacer ? { pacerFor: () => pacer } : {}) };
  let vmadm = new Vmadm({ root, log, watch: opts.watch ?? false, ...clock });
  const vmsDir = path.join(root, 'servers', serverUuid, 'vms');
  const fx: Fixture = {
    root,
    serverUuid,
    vmadm,
    store: await vmadm.openServer(serverUuid, identity(serverUuid)),
    vmsDir,
    fileOf: (uuid) => path.join(vmsDir, `${uuid}.json`),
    readFile: async (uuid) => JSON.parse(await fsp.readFile(fx.fileOf(uuid), 'utf8')) as Record<string, unknown>,
    async reopen(o = {}) {
      await vmadm.close();
      vmadm = new Vmadm({ root, log, watch: o.watch ?? false, ...clock });
      fx.vmadm = vmadm;
      fx.store = await vmadm.openServer(serverUuid, identity(serverUuid));
      return fx.store;
    },
    async cleanup() {
      await vmadm.close();
      await fsp.rm(root, { recursive: true, force: true });
    },
  };
  return fx;
}

export function osPayload(extra: Record<string, unknown> = {}) {
  return {
    brand: 'joyent-minimal',
    alias: 'web0',
    owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
    image_uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99',
    ram: 512,
    quota: 20,
    nics: [
      {
        mac: '90:b8:d0:11:22:33',
        ip: '10.99.99.40',
        netmask: '255.255.255.0',
        gateway: '10.99.99.7',
        nic_tag: 'admin',
        vlan_id: 0,
        network_uuid: 'a4457fc9-ecc0-4ee0-8f44-2d4a3e0b8d8b',
        primary: true,
      },
    ],
    ...extra,
  };
}

export function bhyvePayload(extra: Record<string, unknown> = {}) {
  return {
    brand: 'bhyve',
    alias: 'hvm0',
    ram: 1024,
    vcpus: 2,
    nics: [{ ip: '192.168.1.10', netmask: '255.255.255.0', nic_tag: 'external' }],
    disks: [
      { image_uuid: '462d1d03-8457-e134-a408-cf9ea2b9be96', image_size: 10240, boot: true },
      { size: 20480 },
    ],
    ...extra,
  };
}

/** Collects a store's events. */
export function recordEvents(store: VmStore): { events: VmEvent[]; ready: Map<string, Vm>; stop(): void } {
  const events: VmEvent[] = [];
  const sub = store.subscribe((ev) => events.push(ev));
  return { events, ready: sub.ready, stop: sub.unsubscribe };
}

export async function expectReject(p: Promise<unknown>): Promise<Record<string, unknown> & Error> {
  try {
    await p;
  } catch (err) {
    return err as Record<string, unknown> & Error;
  }
  throw new Error('expected a rejection');
}

/** A WriteOptions log that records vmadm's warnings (the keys a write removed). */
export function warningLog(): { calls: unknown[][]; warn(...args: unknown[]): void; removed(): string[] } {
  const calls: unknown[][] = [];
  return {
    calls,
    warn(...args: unknown[]) {
      calls.push(args);
    },
    removed() {
      return calls.flatMap((c) => ((c[0] as { removed?: string[] } | undefined)?.removed ?? []));
    },
  };
}
