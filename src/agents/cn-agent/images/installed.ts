/**
 * The images a mock CN has installed, for image_ensure_present, image_get and the creates.
 *
 * A mock CN stores no image data. An image counts as installed once image_ensure_present
 * imported it (its manifest checked against IMGAPI when one is configured), once a VM was
 * created or reprovisioned from it, or while any VM on the CN uses it. Installed manifests
 * are kept in memory per CN; the VM-derived ones survive a restart because the VMs do.
 */
import { HttpStatusError } from '../../../common/http-client.js';
import type { TaskContext } from '../types.js';

/** Record an image as imported (no manifest yet unless given). */
export function markImageInstalled(ctx: TaskContext, uuid: string, manifest?: Record<string, unknown>): void {
  const known = ctx.state.images.get(uuid);
  if (known && !manifest) return;
  ctx.state.images.set(uuid, { uuid, manifest: manifest ?? known?.manifest ?? { v: 2, uuid } });
}

/** The images the CN's VMs use (zone image_uuid and HVM disk images). */
export function imagesInUse(ctx: Pick<TaskContext, 'cn'>): Set<string> {
  const out = new Set<string>();
  for (const vm of ctx.cn.vms.list({ include_dni: true })) {
    if (typeof vm.image_uuid === 'string') out.add(vm.image_uuid.toLowerCase());
    for (const d of vm.disks ?? []) if (typeof d.image_uuid === 'string') out.add(d.image_uuid.toLowerCase());
  }
  return out;
}

export function isImageInstalled(ctx: TaskContext, uuid: string): boolean {
  return ctx.state.images.has(uuid) || imagesInUse(ctx).has(uuid);
}

/** GET <imgapi>/images/<uuid>; undefined when IMGAPI answers 404. */
export async function fetchManifest(ctx: TaskContext, uuid: string): Promise<Record<string, unknown> | undefined> {
  const base = ctx.env.imgapiUrl;
  if (!base) throw new Error('no IMGAPI URL is configured');
  const url = `${base.replace(/\/+$/, '')}/images/${uuid}`;
  try {
    const res = await ctx.env.http.call<Record<string, unknown>>({ method: 'GET', url, timeoutMs: 30_000 });
    if (typeof res.body !== 'object' || res.body === null || Array.isArray(res.body)) {
      throw new Error(`IMGAPI answered ${url} with something that is not a manifest`);
    }
    return res.body;
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
    throw err;
  }
}

/** The bytes an import of this image moves: its file's size in the manifest (undefined when unknown). */
export function imageFileBytes(manifest: unknown): number | undefined {
  const files = (manifest as { files?: unknown } | null | undefined)?.files;
  const size = Array.isArray(files) ? (files[0] as { size?: unknown } | undefined)?.size : undefined;
  return typeof size === 'number' && size > 0 ? size : undefined;
}
