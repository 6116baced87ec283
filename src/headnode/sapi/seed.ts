/**
 * What a fresh dev DC's SAPI holds: the `sdc` application and, under it, one service of type
 * `agent` per global-zone agent, shaped the way sdcadm creates them (sdcadm lib/steps/sapi.js
 * ensureAgentServices: `smartdc_role` / `smartdc_type: core` tags, SERVICE_NAME and a log level
 * in the metadata, the installed image as `params.image_uuid`). The VM services of a real DC
 * (cnapi, vmapi, ...) are not seeded: nothing in mockcloud provisions core zones.
 */
import { createHash } from 'node:crypto';
import { BUILTIN_AGENTS } from '../../mockcn/agents-dir.js';
import type { SapiApplication, SapiServiceObject, SapiState } from './model.js';

/** sdcadm's list of agent services (lib/steps/sapi.js). */
export const AGENT_SERVICE_NAMES = [
  'agents_core',
  'amon-agent',
  'amon-relay',
  'cmon-agent',
  'cn-agent',
  'config-agent',
  'firewaller',
  'hagfish-watcher',
  'net-agent',
  'smartlogin',
  'vm-agent',
] as const;

/** A name-based uuid, so the seed objects keep their uuids on every machine. */
export function seedUuid(name: string): string {
  const h = createHash('sha1').update(`mockcloud-sapi:${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** `CNAPI_SERVICE: cnapi.<dc>.<domain>` and the like, as headnode setup puts them in the sdc application. */
export const CORE_SERVICES = ['cnapi', 'vmapi', 'napi', 'imgapi', 'papi', 'sapi', 'fwapi', 'cmon', 'ufds', 'workflow', 'moray', 'binder'] as const;

export function serviceDomains(dc: string, domain: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const svc of CORE_SERVICES) out[`${svc.toUpperCase()}_SERVICE`] = `${svc}.${dc}.${domain}`;
  return out;
}

export interface SeedOptions {
  adminUuid: string;
  datacenterName: string;
  dnsDomain?: string;
}

export function seedFreshDc(state: SapiState, opts: SeedOptions): void {
  const app: SapiApplication = {
    uuid: seedUuid('application:sdc'),
    name: 'sdc',
    owner_uuid: opts.adminUuid,
    params: {},
    metadata: {
      datacenter_name: opts.datacenterName,
      dns_domain: opts.dnsDomain ?? 'local',
      ufds_admin_uuid: opts.adminUuid,
      // What the agents' manifests render (sdc-headnode's sdc application metadata): each core
      // service's DNS name, and no AMQP (the agents' `no_rabbit`).
      ...serviceDomains(opts.datacenterName, opts.dnsDomain ?? 'local'),
      no_rabbit: true,
    },
    manifests: {},
  };
  state.applications.set(app.uuid, app);
  for (const name of AGENT_SERVICE_NAMES) {
    const image = BUILTIN_AGENTS.find((a) => a.name === name)?.imageUuid;
    const svc: SapiServiceObject = {
      uuid: seedUuid(`service:${name}`),
      name,
      application_uuid: app.uuid,
      params: {
        tags: { smartdc_role: name, smartdc_type: 'core' },
        ...(image ? { image_uuid: image } : {}),
      },
      metadata: { SERVICE_NAME: name, [`${name.toUpperCase().replace('-', '_')}_LOG_LEVEL`]: 'info' },
      manifests: {},
      type: 'agent',
    };
    state.services.set(svc.uuid, svc);
  }
}
