/**
 * An image's icon (sdc-imgapi lib/images.js apiAddImageIcon, apiGetImageIcon,
 * apiDeleteImageIcon): `PUT /images/:uuid/icon` takes a JPEG, GIF or PNG of at most 128 KiB
 * (its size and sha1 checked against `Content-Length` and `?sha1=`), `GET` serves it with its
 * Etag, Content-MD5 and Content-Type, `DELETE` removes it. The manifest says only `icon: true`.
 * The file is `<image dir>/icon`, written durably before the manifest names it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fsyncDir } from '../../common/durable-file.js';
import { ok, query, type Reply, type Req } from '../http.js';
import { notModified } from './access.js';
import { imgapiError } from './errors.js';
import { serializeImage, type ImageManifest } from './images.js';
import type { ImageCatalogue } from './writes.js';

const ICON_CONTENT_TYPES = ['image/jpeg', 'image/gif', 'image/png'];
const MAX_ICON_SIZE = 128 * 1024;

function iconOf(cat: ImageCatalogue, uuid: string): string {
  return path.join(path.dirname(cat.fileOf(uuid)), 'icon');
}

export async function addImageIcon(cat: ImageCatalogue, m: ImageManifest, req: Req): Promise<Reply> {
  const type = req.headers['content-type'];
  if (!type || !ICON_CONTENT_TYPES.includes(type)) {
    req.resume();
    throw imgapiError('Upload', `invalid content-type, ${String(type)}, must be one of ${ICON_CONTENT_TYPES.join(', ')}`);
  }
  const lengthHeader = req.headers['content-length'];
  const contentLength = lengthHeader !== undefined && !Number.isNaN(Number(lengthHeader)) ? Number(lengthHeader) : undefined;
  if (contentLength !== undefined && contentLength > MAX_ICON_SIZE) {
    req.resume();
    throw imgapiError('Upload', `icon size, ${contentLength}, exceeds the maximum allowed file size, 128 KiB`);
  }
  const final = iconOf(cat, m.uuid);
  const dir = path.dirname(final);
  await fsp.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.icon.${randomBytes(6).toString('hex')}.tmp`);
  const sha1 = createHash('sha1');
  const md5 = createHash('md5');
  let size = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > MAX_ICON_SIZE) {
        cb(imgapiError('Upload', `icon size, ${size}, exceeds the maximum allowed file size, 128 KiB`));
        return;
      }
      sha1.update(chunk);
      md5.update(chunk);
      cb(null, chunk);
    },
  });
  // restify's body reader has already read an image/* body (it leaves only octet-streams).
  const read = (req as unknown as { body?: unknown }).body;
  const source = Buffer.isBuffer(read) ? Readable.from([read]) : req;
  try {
    await pipeline(source, meter, createWriteStream(tmp, { mode: 0o644 }));
    if (contentLength !== undefined && contentLength !== 0 && size !== contentLength) {
      throw imgapiError('Upload', `"Content-Length" header, ${contentLength}, does not match uploaded size, ${size}`);
    }
    const digest = sha1.digest('hex');
    const wanted = query(req).sha1;
    if (typeof wanted === 'string' && wanted && wanted !== digest) {
      throw imgapiError('Upload', `"sha1" hash, ${wanted}, does not match the uploaded icon file sha1 hash, ${digest}`);
    }
    const fd = await fsp.open(tmp, 'r+');
    try {
      await fd.sync();
    } finally {
      await fd.close();
    }
    await fsp.rename(tmp, final);
    await fsyncDir(dir);
    const now = cat.get(m.uuid) ?? m;
    const next: ImageManifest = {
      ...now,
      icon: { sha1: digest, size, contentType: type, contentMD5: md5.digest('base64'), mtime: new Date().toISOString() },
    };
    await cat.put(next);
    return ok(serializeImage(next));
  } catch (err) {
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
}

export async function getImageIcon(cat: ImageCatalogue, m: ImageManifest, req: Req, res: http.ServerResponse): Promise<Reply | void> {
  const icon = m.icon;
  if (!icon) throw imgapiError('ResourceNotFound', `image "${m.uuid}" has no icon`);
  const cond = notModified(req, icon.sha1);
  if (cond) return cond;
  res.writeHead(200, {
    Etag: icon.sha1,
    'Last-Modified': new Date(icon.mtime).toUTCString(),
    'Content-Length': String(icon.size),
    'Content-Type': icon.contentType,
    'Content-MD5': icon.contentMD5,
  });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  await pipeline(createReadStream(iconOf(cat, m.uuid)), res);
}

export async function deleteImageIcon(cat: ImageCatalogue, m: ImageManifest): Promise<Reply> {
  const next: ImageManifest = { ...m };
  delete next.icon;
  await cat.put(next);
  await fsp.rm(iconOf(cat, m.uuid), { force: true });
  return ok(serializeImage(next));
}
