/**
 * The changefeed wire protocol (node-sdc-changefeed 1.5.x: lib/publisher.js and
 * lib/listener.js; sdc-napi lib/napi.js for NAPI's resources), one definition for both
 * ends: the dev NAPI and the bench sink publish with it (./publisher.ts), net-agent listens
 * with it (src/agents/net-agent/changefeed.ts).
 *
 * - Handshake: plain `GET /changefeeds` answers the resources (a probe: a service without a
 *   changefeed answers 404); the same path upgraded to a websocket carries the feed. The
 *   listener's `Accept-Version` picks the registration protocol: below 2 (or none, or `*`) v1,
 *   otherwise v2.
 * - Registration: the listener's first text frame. v1 `{instance, service?, changeKind:
 *   {resource, subResources}}`, answered with that resource's configuration; v2 `{instance,
 *   service?, resources: [{resource, subResources}, …]}`, answered with `{bootstrapRoutes:
 *   [<configuration>, …]}`. A configuration is `{resource, bootstrapRoute, subResources}`:
 *   where the listener re-reads everything of the resource, since it may have missed items.
 * - Then each change is one frame `{changeKind: {resource, subResources}, changedResourceId,
 *   …extra fields, published: "<ms>"}`; the listener's only frames are the text `heartbeat`.
 */
import type { RawData } from 'ws';

export const CHANGEFEED_PATH = '/changefeeds';
export const CHANGEFEED_STATS_PATH = '/changefeeds/stats';
/** What a listener sends now and then to keep its socket open. */
export const LISTENER_HEARTBEAT = 'heartbeat';
/** The registration protocol a v2 listener asks for in `Accept-Version`. */
export const LISTENER_ACCEPT_VERSION = '~2';

export type ChangefeedVersion = 1 | 2;

/** What changed (a publisher's item) or what a listener wants (its registration). */
export interface ChangeKind {
  resource: string;
  subResources: string[];
}

export interface ChangeItem {
  changeKind: ChangeKind;
  changedResourceId: string;
  [extra: string]: unknown;
}

/** A publisher's configuration of one resource: also the bootstrap route it answers. */
export interface ResourceConfig extends ChangeKind {
  bootstrapRoute: string;
}

/** NAPI's NIC anti-spoof flags: NIC fields, and each a NIC subresource on NAPI's changefeed. */
export const NIC_ANTI_SPOOF_FLAGS = [
  'allow_dhcp_spoofing',
  'allow_ip_spoofing',
  'allow_mac_spoofing',
  'allow_restricted_traffic',
  'allow_unfiltered_promisc',
] as const;

/** The network subresources NAPI publishes (and net-agent registers for). */
export const NETWORK_SUBRESOURCES = ['create', 'delete', 'gateway', 'resolvers', 'routes'] as const;

/** NAPI's publisher configuration (sdc-napi lib/napi.js). */
export const NAPI_CHANGEFEED_RESOURCES: ResourceConfig[] = [
  { bootstrapRoute: '/aggregations', resource: 'aggregation', subResources: ['create', 'delete', 'lacp_mode'] },
  { bootstrapRoute: '/networks', resource: 'network', subResources: [...NETWORK_SUBRESOURCES] },
  { bootstrapRoute: '/nic_tags', resource: 'nic_tag', subResources: ['create', 'delete'] },
  { bootstrapRoute: '/nics', resource: 'nic', subResources: ['create', 'delete', ...NIC_ANTI_SPOOF_FLAGS, 'primary', 'state'] },
];

// ---- handshake

/** The registration protocol a listener speaks, from its Accept-Version (`~1`, `~2`, `*`). */
export function changefeedVersion(header: string | string[] | undefined): ChangefeedVersion {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v || v.trim() === '*') return 1;
  const m = /(\d+)/.exec(v);
  return m && Number(m[1]) >= 2 ? 2 : 1;
}

/** Whether an HTTP upgrade request is for the changefeed. */
export function isChangefeedUpgrade(url: string | undefined): boolean {
  return (url ?? '').split('?')[0] === CHANGEFEED_PATH;
}

/** The base (no trailing slash), probe and websocket URLs of a publisher at `baseUrl` (http://…). */
export function changefeedUrls(baseUrl: string): { base: string; probe: string; socket: string } {
  const base = baseUrl.replace(/\/+$/, '');
  const probe = `${base}${CHANGEFEED_PATH}`;
  return { base, probe, socket: probe.replace(/^http/, 'ws') };
}

/** A text frame as a string, whatever shape `ws` delivered it in. */
export function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

// ---- registration (listener → publisher)

export interface Registration {
  instance: string;
  service?: string;
  resources: ChangeKind[];
}

/** A v2 listener's registration frame. */
export function registrationFrame(reg: Registration): string {
  return JSON.stringify({ instance: reg.instance, service: reg.service, resources: reg.resources });
}

/** A registration a publisher accepted: what to register, and its configurations to answer. */
export interface AcceptedRegistration {
  instance: string;
  service: string | undefined;
  kinds: ChangeKind[];
  configs: ResourceConfig[];
}

/** Why a publisher refuses a registration (the socket's close reason), and what it got. */
export interface RefusedRegistration {
  refused: string;
  registration: unknown;
}

/**
 * A publisher's reading of a registration frame, against the resources it publishes:
 * publisher.js's checks, in its order, with its reasons.
 */
export function parseRegistration(
  text: string,
  version: ChangefeedVersion,
  config: (resource: string) => ResourceConfig | undefined,
): AcceptedRegistration | RefusedRegistration {
  const v = `v${version}`;
  let reg: unknown;
  try {
    reg = JSON.parse(text);
  } catch {
    return { refused: `failed to parse ${v} registration payload`, registration: text };
  }
  const refuse = (reason: string): RefusedRegistration => ({ refused: reason, registration: reg });
  if (!isObject(reg)) return refuse(`${v} registration should be an object`);
  if (typeof reg.instance !== 'string') return refuse(`${v} registration should contain an "instance" identifier`);
  const accepted: AcceptedRegistration = {
    instance: reg.instance,
    service: typeof reg.service === 'string' ? reg.service : undefined,
    kinds: [],
    configs: [],
  };
  if (version === 1) {
    const kind = reg.changeKind;
    if (!isObject(kind)) return refuse('v1 registration should contain a "changeKind"');
    if (typeof kind.resource !== 'string') return refuse('v1 registration should contain a valid "resource"');
    if (!isStringArray(kind.subResources)) return refuse('v1 registration should contain a valid "subResources" array');
    const c = config(kind.resource);
    if (!c) return refuse(`unknown resource: ${kind.resource}`);
    accepted.kinds.push({ resource: c.resource, subResources: kind.subResources });
    accepted.configs.push(c);
    return accepted;
  }
  if (!Array.isArray(reg.resources)) return refuse('v2 registration should contain a "resources" array');
  if (reg.resources.length === 0) return refuse('no resources specified');
  for (const r of reg.resources as unknown[]) {
    if (!isObject(r)) return refuse('v2 registration "resources" array should contain objects');
    const { resource, subResources } = r;
    if (typeof resource !== 'string' || resource.length === 0) return refuse('v2 registration resources should contain a "resource"');
    if (!isStringArray(subResources)) return refuse('v2 registration resources should contain "subResources"');
    const c = config(resource);
    if (!c) return refuse(`unknown resource: ${resource}`);
    accepted.kinds.push({ resource, subResources });
    accepted.configs.push(c);
  }
  return accepted;
}

/** The publisher's answer to an accepted registration: the bootstrap routes. */
export function bootstrapFrame(version: ChangefeedVersion, configs: ResourceConfig[]): string {
  return JSON.stringify(version === 1 ? configs[0] : { bootstrapRoutes: configs });
}

// ---- publisher → listener

/** One change as the publisher sends it. */
export function changeItemFrame(item: ChangeItem, now = Date.now()): string {
  return JSON.stringify({ ...item, published: String(now) });
}

/** Whether a registration for `subResources` gets an item of `kind`: they share one. */
export function wantsItem(subResources: readonly string[], kind: ChangeKind): boolean {
  return kind.subResources.some((s) => subResources.includes(s));
}

/** A frame the listener got, as a JSON object; undefined when it is not one. */
export function readFrame(text: string): Record<string, unknown> | undefined {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof msg === 'object' && msg !== null ? (msg as Record<string, unknown>) : undefined;
}

/** The resources named by a v2 bootstrap answer; undefined when the frame is not one. */
export function bootstrapResources(frame: Record<string, unknown>): string[] | undefined {
  if (!Array.isArray(frame.bootstrapRoutes)) return undefined;
  const resources: string[] = [];
  for (const route of frame.bootstrapRoutes) {
    const resource = (route as { resource?: unknown } | null)?.resource;
    if (typeof resource === 'string') resources.push(resource);
  }
  return resources;
}

/** A change item from a frame (subResources that are not strings dropped); undefined when it is not one. */
export function parseChangeItem(frame: Record<string, unknown>): ChangeItem | undefined {
  const kind = frame.changeKind as { resource?: unknown; subResources?: unknown } | undefined;
  if (!kind || typeof kind.resource !== 'string' || typeof frame.changedResourceId !== 'string') return undefined;
  const subResources = Array.isArray(kind.subResources) ? kind.subResources.filter((s): s is string => typeof s === 'string') : [];
  return { ...frame, changeKind: { resource: kind.resource, subResources }, changedResourceId: frame.changedResourceId };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}
