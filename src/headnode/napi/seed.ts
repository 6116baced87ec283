/**
 * What a fresh Triton DC's NAPI holds for compute nodes to use: the `admin` and `external`
 * nic tags and networks. The admin network follows COAL's addressing (10.99.99.x, gateway
 * .7, first provisioned address .38) but is a /16, so that thousands of mock CNs and their
 * VMs each get an admin address; the external network is COAL's 10.88.88.0/24. Only the admin
 * user may provision on `admin`, as on a fresh DC.
 */
import { addNetwork } from './networks.js';
import { addNicTag } from './nic-tags.js';
import type { StateCtx } from './validators.js';

export interface SeedNetwork {
  uuid?: string;
  name: string;
  nic_tag: string;
  vlan_id: number;
  subnet: string;
  provision_start_ip: string;
  provision_end_ip: string;
  gateway?: string;
  resolvers?: string[];
  mtu?: number;
  description?: string;
  /** Owned by the DC's admin user (`owner_uuids: [<ufds_admin_uuid>]`), as sdc-napi's SAPI
   * manifest template (sapi_manifests/napi/template, `initialNetworks.admin`) seeds `admin`. */
  adminOwned?: boolean;
}

export const DEFAULT_SEED_NETWORKS: SeedNetwork[] = [
  {
    name: 'admin',
    nic_tag: 'admin',
    vlan_id: 0,
    subnet: '10.99.0.0/16',
    provision_start_ip: '10.99.99.38',
    provision_end_ip: '10.99.255.250',
    gateway: '10.99.99.7',
    resolvers: ['10.99.99.11'],
    mtu: 1500,
    description: 'admin network',
    adminOwned: true,
  },
  {
    name: 'external',
    nic_tag: 'external',
    vlan_id: 0,
    subnet: '10.88.88.0/24',
    provision_start_ip: '10.88.88.3',
    provision_end_ip: '10.88.88.250',
    gateway: '10.88.88.2',
    resolvers: ['8.8.8.8', '8.8.4.4'],
    mtu: 1500,
    description: 'external network',
  },
];

/** Create the seed nic tags and networks in an empty state (not persisted here). */
export function seedFreshDc(ctx: StateCtx, networks: SeedNetwork[] = DEFAULT_SEED_NETWORKS): void {
  const tags = new Set(['admin', 'external', ...networks.map((n) => n.nic_tag)]);
  for (const name of tags) addNicTag(ctx, { name, mtu: 1500 });
  for (const { adminOwned, ...n } of networks) {
    addNetwork(ctx, adminOwned ? { ...n, owner_uuids: [ctx.state.adminUuid] } : n);
  }
}
