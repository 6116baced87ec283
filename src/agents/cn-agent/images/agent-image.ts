/**
 * Fetching and checking an agent image from IMGAPI for agent_install, the way the real
 * agent does with curl, openssl, file and tar: manifest, file, size, sha1, compression, and
 * that the tarball is an agent (`<name>/image_uuid` in it). The file is streamed to a temp
 * file (hashing as it goes, never more than the manifest's size) through the daemon's shared
 * HTTP agent; the two small files an install needs are read out of the tarball in memory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { list as tarList } from 'tar';
import type { TaskContext } from '../types.js';
import { fetchManifest } from './installed.js';

/** Fails agent_install with this message (prefixed "AgentInstall error: "). */
export class AgentImageError extends Error {}

export interface AgentImage {
  manifest: Record<string, unknown>;
  /** The agent directory name inside the tarball (its first path component). */
  baseName: string;
  packageJson: string;
  imageUuidFile: string;
}

const MAX_SMALL_FILE = 1024 * 1024;

export async function fetchAgentImage(ctx: TaskContext, imageUuid: string): Promise<AgentImage> {
  const base = ctx.env.imgapiUrl;
  if (!base) throw new AgentImageError('no IMGAPI URL is configured for this mock CN');
  const root = base.replace(/\/+$/, '');
  const manifestUrl = `${root}/images/${imageUuid}`;
  const fileUrl = `${manifestUrl}/file`;

  const manifest = await fetchManifest(ctx, imageUuid);
  if (!manifest) throw new AgentImageError(`Image not found at ${manifestUrl}`);
  const file0 = Array.isArray(manifest.files) ? (manifest.files[0] as Record<string, unknown> | undefined) : undefined;
  if (!file0 || typeof file0.size !== 'number' || typeof file0.sha1 !== 'string') {
    throw new AgentImageError(`Manifest at ${manifestUrl} has no file with a size and sha1`);
  }
  const agentName = manifest.name;
  if (typeof agentName !== 'string' || agentName.length === 0) throw new AgentImageError('Manifest is missing "name"');

  const tmp = path.join(
    ctx.env.tmpDir ?? os.tmpdir(),
    `mockcloud-agent-${ctx.cn.uuid}-${imageUuid}-${randomBytes(4).toString('hex')}.file`,
  );
  try {
    const got = await download(ctx, fileUrl, tmp, file0.size);
    if (got.size !== file0.size) throw new AgentImageError(`Unexpected file size (${file0.size} vs ${got.size})`);
    if (got.sha1 !== file0.sha1) throw new AgentImageError(`sha1 does not match: (${got.sha1} vs ${file0.sha1})`);
    const compression = typeof file0.compression === 'string' && file0.compression ? file0.compression : sniff(got.head);
    if (compression === 'bzip2') {
      throw new AgentImageError('bzip2-compressed agent images cannot be read on a mock CN (use gzip)');
    }
    if (compression !== 'gzip') throw new AgentImageError(`unknown compression: ${compression}`);
    const contents = await readTarball(tmp, agentName);
    return { manifest, ...contents };
  } finally {
    await fsp.unlink(tmp).catch(() => undefined);
  }
}

function sniff(head: Buffer): string {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.subarray(0, 3).toString('latin1') === 'BZh') return 'bzip2';
  return `unhandled file type (${head.subarray(0, 4).toString('hex')})`;
}

interface Downloaded {
  size: number;
  sha1: string;
  head: Buffer;
}

/** GET `url` into `file`, refusing more than `limit` + 1 bytes. */
function download(ctx: TaskContext, url: string, file: string, limit: number): Promise<Downloaded> {
  const secure = url.startsWith('https:');
  const get = secure ? https.get : http.get;
  const agent = secure ? undefined : ctx.env.http.agent;
  return new Promise((resolve, reject) => {
    const req = get(url, { agent, signal: ctx.signal, timeout: 60_000 }, (res) => {
      if (res.statusCode === 404) {
        res.resume();
        reject(new AgentImageError(`Image not found at ${url}`));
        return;
      }
      if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
        res.resume();
        reject(new AgentImageError(`GET ${url}: HTTP ${res.statusCode}`));
        return;
      }
      const hash = createHash('sha1');
      let size = 0;
      let head = Buffer.alloc(0);
      const meter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          size += chunk.length;
          if (head.length < 8) head = Buffer.concat([head, chunk.subarray(0, 8 - head.length)]);
          if (size > limit + 1) {
            cb(new AgentImageError(`Unexpected file size (${limit} vs more than ${limit})`));
            return;
          }
          hash.update(chunk);
          cb(null, chunk);
        },
      });
      pipeline(res, meter, createWriteStream(file, { mode: 0o600 })).then(
        () => resolve({ size, sha1: hash.digest('hex'), head }),
        reject,
      );
    });
    req.on('timeout', () => req.destroy(new AgentImageError(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

/** The agent's directory, package.json and image_uuid from the tarball (gzip). */
async function readTarball(file: string, agentName: string): Promise<Omit<AgentImage, 'manifest'>> {
  let baseName: string | undefined;
  let hasMarker = false;
  const wanted = new Map<string, Buffer[]>();
  const sizes = new Map<string, number>();
  try {
    await tarList({
      file,
      onReadEntry: (entry) => {
        const p = entry.path.replace(/^\.\//, '');
        if (baseName === undefined && p.length > 0) baseName = p.split('/')[0];
        if (p === `${agentName}/image_uuid`) hasMarker = true;
        if (baseName !== undefined && (p === `${baseName}/package.json` || p === `${baseName}/image_uuid`)) {
          const chunks: Buffer[] = [];
          wanted.set(p, chunks);
          entry.on('data', (c: Buffer) => {
            const total = (sizes.get(p) ?? 0) + c.length;
            sizes.set(p, total);
            if (total <= MAX_SMALL_FILE) chunks.push(c);
          });
        }
      },
    });
  } catch (err) {
    throw new AgentImageError(`cannot read the agent tarball: ${(err as Error).message}`);
  }
  if (!hasMarker) throw new AgentImageError(`Could not find ${agentName}/image_uuid in ${path.basename(file)}`);
  if (!baseName) throw new AgentImageError('tarball missing agentName/ directory');
  const read = (name: string) => {
    const chunks = wanted.get(`${baseName}/${name}`);
    if (!chunks) throw new AgentImageError(`tarball has no ${baseName}/${name}`);
    return Buffer.concat(chunks).toString('utf8');
  };
  return { baseName, packageJson: read('package.json'), imageUuidFile: read('image_uuid') };
}
