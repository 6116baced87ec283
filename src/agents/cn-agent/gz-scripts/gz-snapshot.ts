/**
 * The global zone a command_execute script sees: a directory of mock SmartOS commands
 * (`sysinfo`, `vmadm`, `zfs`, `zpool`, `imgadm`, `fwadm`, `uname`, `hostname`, `zonename`) put first on
 * its PATH, each a one-line wrapper running the compiled gz-commands/main.js on a JSON
 * snapshot of the CN taken just before the script starts (sysinfo, VMs, ZFS view, images).
 * All of it lives in one temporary directory per run, removed after the run.
 */
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GzImage, GzSnapshot } from '../gz-commands/types.js';
import { GZ_COMMANDS } from '../gz-commands/run.js';
import type { TaskContext } from '../types.js';
import { fetchManifest, imagesInUse, markImageInstalled } from '../images/installed.js';
import { readCnSysinfo } from '../task-support/sysinfo-file.js';
import { viewOf } from '../zfs/cn-zfs.js';
import { datasetProperties } from '../zfs/model.js';

/** At most this many manifests are fetched from IMGAPI for one snapshot (the rest stay bare). */
const MAX_MANIFEST_FETCHES = 32;

export interface GzEnvironment {
  /** The directory to put first on the script's PATH. */
  binDir: string;
  /** The per-run directory holding it all; remove it after the run. */
  dir: string;
}

/**
 * Where the compiled gz-commands entry is: beside this module's folder when running from
 * dist/, or dist/'s twin of it when running from the TypeScript sources (tests under vitest,
 * after `npm run build`). Undefined when neither exists.
 */
export function gzCommandsEntry(): string | undefined {
  const here = fileURLToPath(new URL('../gz-commands/main.js', import.meta.url));
  if (existsSync(here)) return here;
  const marker = `${path.sep}src${path.sep}agents${path.sep}`;
  const at = here.lastIndexOf(marker);
  if (at === -1) return undefined;
  const twin = `${here.slice(0, at)}${path.sep}dist${here.slice(at)}`;
  return existsSync(twin) ? twin : undefined;
}

export async function prepareGzEnvironment(ctx: TaskContext, entry: string): Promise<GzEnvironment> {
  const snapshot = await takeSnapshot(ctx);
  const dir = await fsp.mkdtemp(path.join(ctx.env.tmpDir ?? os.tmpdir(), 'mockcloud-gz-'));
  try {
    const binDir = path.join(dir, 'bin');
    await fsp.mkdir(binDir);
    const file = path.join(dir, 'cn.json');
    await fsp.writeFile(file, JSON.stringify(snapshot), { mode: 0o600 });
    for (const name of Object.keys(GZ_COMMANDS)) {
      // The script's own NODE_OPTIONS must not reach the mock command's node.
      const wrapper = `#!/bin/sh\nunset NODE_OPTIONS\nexec ${shellQuote(process.execPath)} ${shellQuote(entry)} ${shellQuote(file)} ${name} "$@"\n`;
      await fsp.writeFile(path.join(binDir, name), wrapper, { mode: 0o755 });
    }
    return { binDir, dir };
  } catch (err) {
    await fsp.rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function takeSnapshot(ctx: TaskContext): Promise<GzSnapshot> {
  const sysinfo = await readCnSysinfo(ctx.cn);
  const vms = ctx.cn.vms.list({ include_dni: true }).map((vm) => ({ ...vm }) as Record<string, unknown>);
  const view = await viewOf(ctx);
  const zfs = { pool: view.pool, datasets: view.datasets.map((d) => ({ ...d, properties: datasetProperties(view, d) })) };
  const firewall = ctx.env.firewallState?.(ctx.cn.uuid);
  return { sysinfo, vms, zfs, images: await installedImages(ctx, String(sysinfo.Zpool || 'zones')), ...(firewall ? { firewall } : {}) };
}

/**
 * What `imgadm list -j` shows: the CN's installed images with their manifests. An image known
 * only from a VM gets its manifest from IMGAPI once (kept for the next runs), as imgadm's
 * database has it from the import.
 */
async function installedImages(ctx: TaskContext, zpool: string): Promise<GzImage[]> {
  for (const uuid of imagesInUse(ctx)) if (!ctx.state.images.has(uuid)) markImageInstalled(ctx, uuid);
  let fetches = 0;
  const out: GzImage[] = [];
  for (const img of ctx.state.images.values()) {
    let manifest = img.manifest;
    if (manifest.name === undefined && ctx.env.imgapiUrl && fetches++ < MAX_MANIFEST_FETCHES) {
      try {
        const fetched = await fetchManifest(ctx, img.uuid);
        if (fetched) {
          markImageInstalled(ctx, img.uuid, fetched);
          manifest = fetched;
        }
      } catch (err) {
        ctx.log.warn({ err, image: img.uuid }, 'cannot fetch the image manifest for imgadm');
      }
    }
    out.push({ manifest, zpool, ...(ctx.env.imgapiUrl ? { source: ctx.env.imgapiUrl } : {}) });
  }
  return out;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
