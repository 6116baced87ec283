/**
 * `machine_create` params as CNAPI passes them on from a VMAPI provision (cn-agent-spec §3.3):
 * a joyent-minimal zone with one NIC on the sink's external network. IPs and MACs are unique
 * per VM index, so 100,000 VMs never clash.
 */
import { randomUUID } from 'node:crypto';
import { formatIpv4, netmask, parseIpv4 } from '../../src/common/ipv4.js';

export const BENCH_OWNER_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';
export const BENCH_IMAGE_UUID = 'fd2cc906-8938-11e3-beab-4359c665ac99';
export const BENCH_BILLING_ID = '73a1ca34-1e30-48c7-8681-70314a9c67d3';

export interface ExternalNetwork {
  uuid: string;
  /** e.g. 172.16.0.0/12: VM IPs are taken from its upper half, clear of the sink's own allocations. */
  subnet: string;
  gateway: string;
}

export function machineCreateParams(index: number, serverUuid: string, net: ExternalNetwork): Record<string, unknown> {
  const uuid = randomUUID();
  const [base, bits] = net.subnet.split('/') as [string, string];
  const baseInt = parseIpv4(base)!;
  const size = 2 ** (32 - Number(bits));
  const ipInt = baseInt + size / 2 + (index % (size / 2 - 2)) + 1;
  const ip = formatIpv4(ipInt);
  const mac = ['90', 'b8', 'd1', ...[16, 8, 0].map((s) => ((index >>> s) & 0xff).toString(16).padStart(2, '0'))].join(':');
  const mask = netmask(Number(bits));
  return {
    uuid,
    alias: `bench-${index}`,
    brand: 'joyent-minimal',
    owner_uuid: BENCH_OWNER_UUID,
    image_uuid: BENCH_IMAGE_UUID,
    billing_id: BENCH_BILLING_ID,
    server_uuid: serverUuid,
    ram: 256,
    max_physical_memory: 256,
    max_swap: 512,
    max_lwps: 2000,
    quota: 10,
    cpu_cap: 100,
    cpu_shares: 128,
    zfs_io_priority: 100,
    customer_metadata: {},
    internal_metadata: {},
    tags: { bench: true },
    resolvers: ['8.8.8.8'],
    autoboot: true,
    nics: [
      {
        mac,
        ip,
        netmask: mask,
        gateway: net.gateway,
        nic_tag: 'external',
        network_uuid: net.uuid,
        vlan_id: 0,
        mtu: 1500,
        primary: true,
        belongs_to_type: 'zone',
        belongs_to_uuid: uuid,
        owner_uuid: BENCH_OWNER_UUID,
        state: 'provisioning',
      },
    ],
  };
}
