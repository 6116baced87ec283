/**
 * The decision rules the agents apply, checked directly: what vm-agent counts as "VMAPI already
 * agrees", what net-agent derives from sysinfo and VMs, and what it writes into a VM.
 */
import { describe, expect, it } from 'vitest';
import { sameOverComparedFields, selectVmsToPut } from '../../src/agents/vm-agent/index.js';
import { pushDownPayload, serverLocalNics, vmLocalNics, type NapiNic } from '../../src/agents/net-agent/index.js';
import { parseCmonOpts } from '../../src/agents/cmon-agent/index.js';
import { newUuid } from '../../src/common/uuid.js';
import type { Sysinfo } from '../../src/common/sysinfo.js';
import type { Vm } from '../../src/vmadm/types.js';

const CN = newUuid();
const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';

function vm(over: Partial<Vm> = {}): Vm {
  return {
    uuid: newUuid(),
    brand: 'joyent',
    state: 'running',
    zone_state: 'running',
    last_modified: '2024-05-01T10:00:00.123Z',
    boot_timestamp: '2024-05-01T09:00:00.000Z',
    quota: 10,
    ...over,
  };
}

describe('vm-agent comparison', () => {
  it('treats VMAPI’s renderings of "nothing" and of times as equal, but not real differences', () => {
    const local = vm({ snapshots: undefined, datasets: [] });
    expect(sameOverComparedFields(local, { ...local, snapshots: [], datasets: null, last_modified: '2024-05-01T10:00:00.123000Z' })).toBe(true);
    expect(sameOverComparedFields(local, { ...local, state: 'stopped' })).toBe(false);
    expect(sameOverComparedFields(local, { ...local, last_modified: '2024-05-01T10:00:01.123Z' })).toBe(false);
    expect(sameOverComparedFields(local, { ...local, quota: 20 })).toBe(false);
    // disks only count for the brands VMAPI keeps them for.
    const zone = vm({ disks: [{ size: 10240 }] });
    expect(sameOverComparedFields(zone, { ...zone, disks: undefined })).toBe(true);
    const hvm = vm({ brand: 'bhyve', disks: [{ size: 10240 }] });
    expect(sameOverComparedFields(hvm, { ...hvm, disks: undefined })).toBe(false);
  });

  it('marks VMAPI-only VMs destroyed, except DNI ones and ones still provisioning', () => {
    const kept = vm();
    const goneUuid = newUuid();
    const dniUuid = newUuid();
    const provUuid = newUuid();
    const sel = selectVmsToPut(
      [kept],
      [{ ...kept }, { uuid: goneUuid, state: 'stopped' }, { uuid: dniUuid, state: 'running' }, { uuid: provUuid, state: 'provisioning' }],
      new Set([dniUuid]),
    );
    expect(Object.keys(sel.vms)).toEqual([goneUuid]);
    expect(sel.vms[goneUuid]).toMatchObject({ state: 'destroyed', zone_state: 'destroyed' });
    expect(sel.skippedInFlight).toEqual([provUuid]);
  });
});

describe('net-agent derivations', () => {
  it('takes the CN’s NICs from sysinfo, skipping aggregation members, admin-tagged as NAPI expects', () => {
    const sysinfo = {
      UUID: CN,
      'Network Interfaces': {
        dnet0: { 'MAC Address': '00:10:FE:00:00:01', ip4addr: '10.99.99.40', 'Link Status': 'up', 'NIC Names': ['admin'] },
        dnet1: { 'MAC Address': '00:10:fe:00:00:02', ip4addr: '', 'Link Status': 'down', 'NIC Names': ['external'] },
        ixgbe0: { 'MAC Address': '00:10:fe:00:00:03', ip4addr: '', 'Link Status': 'up', 'NIC Names': [] },
      },
      'Virtual Network Interfaces': { 'external0': { 'MAC Address': '00:10:fe:00:00:04', ip4addr: '10.88.88.5', VLAN: '12', 'Host Interface': 'dnet1' } },
      'Link Aggregations': { ixgbe0: { Interfaces: [] } },
    } as unknown as Sysinfo;
    const nics = serverLocalNics(sysinfo, CN, ADMIN);
    expect([...nics.keys()].sort()).toEqual(['00:10:fe:00:00:01', '00:10:fe:00:00:02', '00:10:fe:00:00:04']);
    expect(nics.get('00:10:fe:00:00:01')).toMatchObject({
      belongs_to_type: 'server',
      belongs_to_uuid: CN,
      cn_uuid: CN,
      owner_uuid: ADMIN,
      state: 'running',
      createOnly: { ip: '10.99.99.40', nic_tags_provided: ['admin'], nic_tag: 'admin', vlan_id: 0 },
    });
    expect(nics.get('00:10:fe:00:00:02')).toMatchObject({ state: 'stopped', createOnly: { nic_tags_provided: ['external'] } });
    expect(nics.get('00:10:fe:00:00:04')!.createOnly).toEqual({ ip: '10.88.88.5', vlan_id: 12 });
  });

  it('maps a VM’s state onto its NICs and leaves transient states alone', () => {
    const base = vm({ owner_uuid: newUuid(), nics: [{ mac: '90:b8:d0:00:00:01', primary: true, allow_ip_spoofing: true }] });
    expect(vmLocalNics(base, CN, ADMIN).get('90:b8:d0:00:00:01')).toMatchObject({ state: 'running', primary: true, belongs_to_uuid: base.uuid, owner_uuid: base.owner_uuid, cn_uuid: CN, createOnly: { allow_ip_spoofing: true } });
    expect(vmLocalNics({ ...base, state: 'stopped' }, CN, ADMIN).get('90:b8:d0:00:00:01')!.state).toBe('stopped');
    const mid = vmLocalNics({ ...base, state: 'shutting_down' }, CN, ADMIN).get('90:b8:d0:00:00:01')!;
    expect(mid.state).toBeUndefined();
    expect(mid.createOnly.state).toBe('stopped');
  });

  it('writes into a VM only what differs from NAPI, with vmadm’s update keys', () => {
    const mac = '90:b8:d0:00:00:01';
    const v = vm({
      nics: [{ mac, ip: '10.88.88.9', netmask: '255.255.255.0', gateway: '10.88.88.2', gateways: ['10.88.88.2'], nic_tag: 'external', vlan_id: 0, allow_ip_spoofing: true }],
      routes: { '10.1.0.0/16': '10.88.88.2', '192.168.0.0/16': '10.88.88.2' },
      resolvers: ['8.8.8.8'],
    });
    const remote: NapiNic = {
      mac,
      ip: '10.88.88.9',
      netmask: '255.255.255.0',
      gateway: '10.88.88.1',
      nic_tag: 'external',
      vlan_id: 0,
      resolvers: ['9.9.9.9', '8.8.8.8'],
      routes: { '10.1.0.0/16': '10.88.88.2', '172.16.0.0/12': '10.88.88.1' },
    };
    expect(pushDownPayload(v, new Map([[mac, remote]]))).toEqual({
      update_nics: [{ mac, gateway: '10.88.88.1', gateways: ['10.88.88.1'], allow_ip_spoofing: false }],
      set_routes: { '172.16.0.0/12': '10.88.88.1' },
      remove_routes: ['192.168.0.0/16'],
      resolvers: ['9.9.9.9', '8.8.8.8'],
    });
    const agreed = vm({ nics: [{ mac, ip: '10.88.88.9', netmask: '255.255.255.0', gateway: '10.88.88.1', nic_tag: 'external', vlan_id: 0 }], routes: remote.routes, resolvers: ['9.9.9.9', '8.8.8.8'] });
    expect(pushDownPayload(agreed, new Map([[mac, remote]]))).toEqual({});
    const optedOut = { ...agreed, resolvers: ['1.1.1.1'], internal_metadata: { no_nic_resolvers: true } };
    expect(pushDownPayload(optedOut, new Map([[mac, remote]]))).toEqual({});
  });
});

describe('cmon-agent header', () => {
  it('accepts base64 JSON with a boolean isCoreZone and nothing else', () => {
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    expect(parseCmonOpts(undefined)).toBeUndefined();
    expect(parseCmonOpts(b64('{"isCoreZone":true}'))).toBe(true);
    expect(parseCmonOpts(b64('{"isCoreZone":false}'))).toBe(false);
    for (const bad of [b64('{"isCoreZone":"true"}'), b64('null'), b64('[]'), 'not-base64-json']) {
      expect(() => parseCmonOpts(bad), bad).toThrow(/Error parsing x-joyent-cmon-opts header/);
    }
  });
});
