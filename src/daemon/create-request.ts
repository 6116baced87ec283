/**
 * A request to create mock CNs (the control API's POST /servers, the CLI's create-servers and
 * ensure-servers, scenarios, `mirror load`): its shape and its validation, once, at the edge.
 * Bad input is a 400 naming the key; a profile or mix must name profiles the daemon knows. The
 * placement (CNAPI's traits, reserved, reservoir, overprovision ratios) is validated here too,
 * for the request and for the control API's placement update.
 */
import { MockcloudError } from '../common/errors.js';
import { isUuid } from '../common/uuid.js';
import { profileFromObject } from '../mockcn/profile-files.js';
import { OVERPROVISION_KEYS, ProfileCatalogue, type HardwareProfile, type Placement } from '../mockcn/profiles.js';
import { parseMix, type Mix } from './fleet-mix.js';

export const MAX_CREATE_COUNT = 10_000;
export const HOSTNAME_PREFIX_RE = /^[A-Za-z][A-Za-z0-9-]{0,15}$/;

export interface CreateRequest {
  count: number;
  profile?: string;
  /** A weighted mix of profiles (not with `profile`): exact counts by largest remainder. */
  mix?: Mix;
  /** The draws' seed for this request; the daemon's `seed` by default. */
  seed?: string;
  /** Placement set in CNAPI on each new CN, over its profile's. */
  placement?: Placement;
  hostnamePrefix?: string;
  /** The dev DC's headnode server (never from the control API: see createHeadnode). */
  headnode?: boolean;
  /**
   * One CN of a given identity and hardware (`mockcloud mirror load`): its UUID and hostname
   * instead of drawn ones, and a profile given inline (a profile file's keys) instead of named.
   */
  uuid?: string;
  hostname?: string;
  hardware?: HardwareProfile;
}

/** Validate a create request from the control API (external input). */
export function validateCreateRequest(body: unknown, profiles: ProfileCatalogue = new ProfileCatalogue()): CreateRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new MockcloudError('InvalidContent', 'body must be a JSON object like {"count": 10}');
  }
  const b = body as Record<string, unknown>;
  const known = ['count', 'profile', 'mix', 'seed', 'placement', 'hostnamePrefix', 'uuid', 'hostname', 'hardware'];
  const unknown = Object.keys(b).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new MockcloudError('InvalidArgument', `unknown key(s): ${unknown.join(', ')}`);
  if (typeof b.count !== 'number' || !Number.isInteger(b.count) || b.count < 1 || b.count > MAX_CREATE_COUNT) {
    throw new MockcloudError('InvalidArgument', `"count" must be an integer from 1 to ${MAX_CREATE_COUNT}`);
  }
  const req: CreateRequest = { count: b.count };
  if (b.profile !== undefined) {
    if (typeof b.profile !== 'string') throw new MockcloudError('InvalidArgument', '"profile" must be a string');
    profiles.get(b.profile);
    req.profile = b.profile;
  }
  if (b.mix !== undefined) {
    if (req.profile !== undefined) throw new MockcloudError('InvalidArgument', 'give "profile" or "mix", not both');
    const mix = parseMix(b.mix);
    for (const [name] of mix) profiles.get(name);
    req.mix = mix;
  }
  if (b.seed !== undefined) {
    if (typeof b.seed !== 'string' || b.seed === '' || b.seed.length > 256) {
      throw new MockcloudError('InvalidArgument', '"seed" must be a non-empty string of at most 256 characters');
    }
    req.seed = b.seed;
  }
  if (b.placement !== undefined) req.placement = validatePlacement(b.placement, '"placement"');
  if (b.hostnamePrefix !== undefined) {
    if (typeof b.hostnamePrefix !== 'string' || !HOSTNAME_PREFIX_RE.test(b.hostnamePrefix)) {
      throw new MockcloudError('InvalidArgument', '"hostnamePrefix" must be 1-16 letters, digits or dashes, starting with a letter');
    }
    req.hostnamePrefix = b.hostnamePrefix;
  }
  validateIdentity(b, req, profiles);
  return req;
}

/** sysinfo "Hostname" of a CN: what SmartOS takes as a nodename (RFC 1123 labels, at most 63). */
const SERVER_HOSTNAME_RE = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * `uuid`, `hostname` and `hardware` (a profile file's keys, with a name) make one CN of a given
 * identity: only with count 1, and `hardware` instead of `profile` or `mix`.
 */
function validateIdentity(b: Record<string, unknown>, req: CreateRequest, profiles: ProfileCatalogue): void {
  const given = ['uuid', 'hostname', 'hardware'].filter((k) => b[k] !== undefined);
  if (given.length === 0) return;
  if (req.count !== 1) throw new MockcloudError('InvalidArgument', `${given.map((k) => `"${k}"`).join(', ')} name one server: "count" must be 1`);
  if (b.uuid !== undefined) {
    if (!isUuid(b.uuid)) throw new MockcloudError('InvalidArgument', '"uuid" must be a UUID');
    req.uuid = b.uuid.toLowerCase();
  }
  if (b.hostname !== undefined) {
    if (typeof b.hostname !== 'string' || !SERVER_HOSTNAME_RE.test(b.hostname)) {
      throw new MockcloudError('InvalidArgument', '"hostname" must be 1-63 letters, digits or dashes, not starting or ending with a dash');
    }
    if (req.hostnamePrefix !== undefined) throw new MockcloudError('InvalidArgument', 'give "hostname" or "hostnamePrefix", not both');
    req.hostname = b.hostname;
  }
  if (b.hardware !== undefined) {
    if (req.profile !== undefined || req.mix !== undefined) throw new MockcloudError('InvalidArgument', 'give "hardware", "profile" or "mix", not two of them');
    req.hardware = profileFromObject(b.hardware, '"hardware"', new Map(profiles.list().map((p) => [p.name, p])));
  }
}

/** The profile's placement with the request's fields over it. */
export function mergePlacement(base: Placement | undefined, over: Placement | undefined): Placement | undefined {
  if (!base) return over;
  if (!over) return base;
  const out: Placement = { ...base };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/**
 * A placement from the control API or a profile file (external input): traits an object,
 * reserved and reservoir booleans, overprovision ratios numbers ≥ 0 under cpu, ram, disk, io,
 * net (what CNAPI's ServerUpdate accepts).
 */
export function validatePlacement(value: unknown, what: string): Placement {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new MockcloudError('InvalidArgument', `${what} must be an object`);
  const v = value as Record<string, unknown>;
  const unknown = Object.keys(v).filter((k) => !['traits', 'reserved', 'reservoir', 'overprovisionRatios'].includes(k));
  if (unknown.length > 0) throw new MockcloudError('InvalidArgument', `${what}: unknown key(s) ${unknown.join(', ')}; known: traits, reserved, reservoir, overprovisionRatios`);
  const out: Placement = {};
  if (v.traits !== undefined) {
    if (typeof v.traits !== 'object' || v.traits === null || Array.isArray(v.traits)) throw new MockcloudError('InvalidArgument', `${what}.traits must be an object`);
    out.traits = v.traits as Record<string, unknown>;
  }
  for (const k of ['reserved', 'reservoir'] as const) {
    if (v[k] === undefined) continue;
    if (typeof v[k] !== 'boolean') throw new MockcloudError('InvalidArgument', `${what}.${k} must be true or false`);
    out[k] = v[k];
  }
  if (v.overprovisionRatios !== undefined) {
    const r = v.overprovisionRatios;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios must be an object`);
    const ratios: Placement['overprovisionRatios'] = {};
    for (const [k, n] of Object.entries(r)) {
      if (!(OVERPROVISION_KEYS as readonly string[]).includes(k)) {
        throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios: unknown key ${k}; known: ${OVERPROVISION_KEYS.join(', ')}`);
      }
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios.${k} must be a number ≥ 0`);
      ratios[k as keyof typeof ratios] = n;
    }
    out.overprovisionRatios = ratios;
  }
  return out;
}
