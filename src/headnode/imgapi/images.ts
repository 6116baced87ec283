/**
 * The dev IMGAPI's catalogue: image manifests as IMGAPI serializes them (sdc-imgapi
 * lib/images.js `Image.serialize`), the seed set a fresh dev DC offers (a SmartOS zone
 * image, a bhyve image, and one image per mockcloud agent, whose uuid and version match
 * what mock CNs have installed), and ListImages' filters.
 */
import { createHash } from 'node:crypto';
import { uuidFromHex } from '../../common/uuid.js';
import { BUILTIN_AGENTS } from '../../mockcn/agents-dir.js';
import { agentTree, osImageTree, type TreeFile } from './build.js';

export interface ImageFile {
  sha1: string;
  size: number;
  compression: FileCompression;
  /** base64 MD5, for the Content-MD5 header. */
  contentMD5: string;
  /** ISO time of the upload (Last-Modified). */
  mtime: string;
  /** The ZFS dataset's guid, when the uploader (imgadm) gives it. */
  dataset_guid?: string;
}

/** An image's icon (AddImageIcon). */
export interface ImageIcon {
  sha1: string;
  size: number;
  contentType: string;
  contentMD5: string;
  mtime: string;
}

/** IMGAPI's VALID_FILE_COMPRESSIONS (sdc-imgapi lib/constants.js). */
export const FILE_COMPRESSIONS = ['gzip', 'bzip2', 'xz', 'none'] as const;
export type FileCompression = (typeof FILE_COMPRESSIONS)[number];

/** A stored manifest (wire fields only, plus file bookkeeping). */
export interface ImageManifest {
  v: 2;
  uuid: string;
  owner: string;
  name: string;
  version: string;
  state: 'active' | 'unactivated' | 'disabled' | 'creating' | 'failed';
  disabled: boolean;
  public: boolean;
  /** Set at activation (or kept from an imported manifest); absent before. */
  published_at?: string;
  type: string;
  os: string;
  files: ImageFile[];
  description?: string;
  homepage?: string;
  requirements?: Record<string, unknown>;
  image_size?: number;
  nic_driver?: string;
  disk_driver?: string;
  cpu_type?: string;
  tags?: Record<string, unknown>;
  urn?: string;
  origin?: string;
  acl?: string[];
  eula?: string;
  users?: unknown[];
  billing_tags?: string[];
  traits?: Record<string, unknown>;
  generate_passwords?: boolean;
  inherited_directories?: string[];
  icon?: ImageIcon;
  /** When a `creating` placeholder (CreateImageFromVm) expires if it is never published. */
  expires_at?: string;
  /** What failed, for an image in state `failed` (an operator's UpdateImage). */
  error?: Record<string, unknown>;
}

/** What to generate for one seed image. */
export interface SeedImage {
  manifest: Omit<ImageManifest, 'files'>;
  tree: TreeFile[];
}

/** A name-based (v5-style) uuid, so seed images keep their uuids on every machine. */
export function stableUuid(name: string): string {
  const h = createHash('sha1').update(`mockcloud-imgapi:${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  return uuidFromHex(h.subarray(0, 16).toString('hex'));
}

/** Public Triton images are owned by the nil uuid. */
/** IMGAPI's UNSET_OWNER_UUID: the owner of public images no account owns. */
export const UNSET_OWNER_UUID = '00000000-0000-0000-0000-000000000000';

export function seedImages(adminUuid: string): SeedImage[] {
  const out: SeedImage[] = [];
  const base = { name: 'base-64-lts', version: '23.4.0', uuid: stableUuid('base-64-lts@23.4.0'), type: 'zone-dataset' };
  out.push({
    manifest: {
      v: 2,
      uuid: base.uuid,
      owner: UNSET_OWNER_UUID,
      name: base.name,
      version: base.version,
      state: 'active',
      disabled: false,
      public: true,
      published_at: '2024-01-12T18:13:00Z',
      type: 'zone-dataset',
      os: 'smartos',
      description: 'A 64-bit SmartOS image with just essential packages installed. Ideal for users who are comfortable with setting up their own environment and tools.',
      homepage: 'https://docs.tritondatacenter.com/public-cloud/instances/infrastructure/images/smartos/base-lts',
      requirements: { min_platform: { '7.0': '20210826T002459Z' }, networks: [{ name: 'net0', description: 'public' }] },
      tags: { role: 'os', group: 'base-64-lts' },
    },
    tree: osImageTree(base),
  });
  const bhyve = { name: 'ubuntu-22.04', version: '20240101', uuid: stableUuid('ubuntu-22.04@20240101'), type: 'zvol' };
  out.push({
    manifest: {
      v: 2,
      uuid: bhyve.uuid,
      owner: UNSET_OWNER_UUID,
      name: bhyve.name,
      version: bhyve.version,
      state: 'active',
      disabled: false,
      public: true,
      published_at: '2024-01-02T10:00:00Z',
      type: 'zvol',
      os: 'linux',
      description: 'Ubuntu 22.04 LTS (jammy) 64-bit image for bhyve.',
      homepage: 'https://docs.tritondatacenter.com/public-cloud/instances/virtual-machines/images/linux/ubuntu-certified',
      requirements: { brand: 'bhyve', bootrom: 'uefi', min_platform: { '7.0': '20210826T002459Z' }, networks: [{ name: 'net0', description: 'public' }] },
      image_size: 10240,
      nic_driver: 'virtio',
      disk_driver: 'virtio',
      cpu_type: 'host',
      tags: { role: 'os', org: 'ubuntu' },
    },
    tree: osImageTree(bhyve),
  });
  for (const a of BUILTIN_AGENTS) {
    out.push({
      manifest: {
        v: 2,
        uuid: a.imageUuid,
        owner: adminUuid,
        name: a.name,
        version: a.version,
        state: 'active',
        disabled: false,
        public: false,
        published_at: '2024-01-01T00:00:00Z',
        type: 'other',
        os: 'other',
        description: a.description,
        requirements: {},
        tags: { smartdc_service: true },
      },
      tree: agentTree({ name: a.name, version: a.version, description: a.description, uuid: a.imageUuid }),
    });
  }
  return out;
}

/**
 * `Image.serialize`: the wire form (file bookkeeping stays out), in its key order; with
 * `inclAdminFields` each file also says where it is stored (`stor`: a DC without Manta keeps
 * its image files on the IMGAPI zone's own storage, `local`).
 */
export function serializeImage(m: ImageManifest, opts: { inclAdminFields?: boolean } = {}): Record<string, unknown> {
  const data: Record<string, unknown> = {
    v: m.v,
    uuid: m.uuid,
    owner: m.owner,
    name: m.name,
    version: m.version,
    state: m.state,
    disabled: m.disabled,
    public: m.public,
  };
  // Unset before activation: JSON leaves the undefined value out, as IMGAPI's answer does.
  if (m.published_at !== undefined) data.published_at = m.published_at;
  data.type = m.type;
  data.os = m.os;
  data.files = m.files.map((f) => ({
    sha1: f.sha1,
    size: f.size,
    compression: f.compression,
    ...(f.dataset_guid !== undefined ? { dataset_guid: f.dataset_guid } : {}),
    ...(opts.inclAdminFields ? { stor: 'local' } : {}),
  }));
  if (m.acl && m.acl.length > 0) data.acl = m.acl;
  for (const k of OPTIONAL_WIRE_FIELDS) {
    if (k === 'urn' && m.icon) data.icon = true;
    if (m[k] !== undefined) data[k] = m[k];
  }
  if (m.billing_tags && m.billing_tags.length > 0) data.billing_tags = m.billing_tags;
  if (m.traits && Object.keys(m.traits).length > 0) data.traits = m.traits;
  if (m.state === 'failed' && m.error) data.error = m.error;
  return data;
}

const OPTIONAL_WIRE_FIELDS = [
  'description',
  'homepage',
  'eula',
  'urn',
  'requirements',
  'users',
  'generate_passwords',
  'inherited_directories',
  'origin',
  'nic_driver',
  'disk_driver',
  'cpu_type',
  'image_size',
  'tags',
] as const;

export interface ListFilter {
  state?: string;
  name?: string;
  version?: string;
  owner?: string;
  os?: string;
  type?: string;
  public?: boolean;
  tags?: [string, string][];
}

/** ListImages matching: `state` defaults to active; `name` and `version` take a `~substring`. */
export function matches(m: ImageManifest, f: ListFilter): boolean {
  const state = f.state ?? 'active';
  // IMGAPI's state is 'disabled' for an activated image with disabled set; seeds keep 'active'.
  const activated = m.state === 'active' || m.state === 'disabled';
  if (state === 'active' && !(activated && !m.disabled)) return false;
  if (state === 'disabled' && !(activated && m.disabled)) return false;
  if (state === 'unactivated' && m.state !== 'unactivated') return false;
  if ((state === 'creating' || state === 'failed') && m.state !== state) return false;
  const text = (value: string, want: string | undefined): boolean =>
    want === undefined || (want.startsWith('~') ? value.includes(want.slice(1)) : value === want);
  if (!text(m.name, f.name) || !text(m.version, f.version)) return false;
  if (f.owner !== undefined && m.owner !== f.owner) return false;
  if (f.os !== undefined && m.os !== f.os) return false;
  if (f.type !== undefined && m.type !== f.type) return false;
  if (f.public !== undefined && m.public !== f.public) return false;
  for (const [k, v] of f.tags ?? []) {
    if (m.tags === undefined || String(m.tags[k]) !== v) return false;
  }
  return true;
}
