/**
 * The image side of docker_build (sdc-cn-agent lib/backends/smartos/bin/docker-build.js
 * createDockerLayer and what it calls): after each build step,
 *
 * - a step that changes no files (anything but ADD, COPY, RUN) gets new docker manifests and
 *   an `image_create` request to sdc-docker;
 * - a step that does is first published to IMGAPI as the real one publishes its zfs snapshot
 *   diff: a placeholder manifest (`POST /images/<tmp uuid>?action=import`), the gzipped layer
 *   (`PUT /images/<tmp uuid>/file?compression=gzip`, its sha1 checked against the answer),
 *   `POST ...?action=update` with the final uuid (derived from the layer digests as
 *   imgmanifest's imgUuidFromDockerDigests does), docker id and file digests, then
 *   `POST /images/<uuid>?action=activate`; then manifests and `image_create`.
 *
 * The layer of a mock build holds the files the step wrote into the container model (ADD and
 * COPY); a RUN step's layer is empty, as nothing runs in a mock container.
 */
import crypto from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { uuidFromHex } from '../../../common/uuid.js';
import { tarFromEntries, type FsNode } from '../docker/container-fs.js';
import type { BuildCmd } from './words.js';
import type { ImgapiWriter } from '../images/imgapi-writes.js';

export type DockerImage = Record<string, unknown> & {
  config: Record<string, unknown>;
  container_config?: Record<string, unknown>;
  created?: string;
  history?: HistoryEntry[];
  parent?: string | null;
  author?: string;
  comment?: string;
};

export interface HistoryEntry {
  created?: string;
  created_by?: string;
  empty_layer?: boolean;
  author?: string;
  comment?: string;
}

export interface ManifestLayerEntry {
  digest: string;
  mediaType: string;
  size: number;
}

export interface Layer {
  cmd: BuildCmd | null;
  image: DockerImage | null;
  imageDigest: string | null;
  historyEntry?: HistoryEntry;
  /** From a base image: its manifest's entry for this layer. */
  manifestLayerEntry?: ManifestLayerEntry;
  fileDigest?: string;
  uncompressedDigest?: string;
  size?: number;
  uuid?: string;
  /** The IMGAPI manifest of the layer's file (compression and size feed the docker manifest). */
  fileSize?: number;
  manifestDigest?: string;
  manifestStr?: string;
}

/** What the build needs to publish layers. */
export interface LayerPublisher {
  imgapi: ImgapiWriter;
  owner: string;
  /** Ask sdc-docker (`image_create`) and wait for its answer. */
  request(event: Record<string, unknown>): Promise<unknown>;
}

/** ADD, COPY and RUN change files; every other instruction only the config. */
export function isMetadataCmd(cmd: BuildCmd | null): boolean {
  if (!cmd) return false;
  return !['ADD', 'COPY', 'RUN'].includes(cmd.name);
}

function sha256(data: string | Buffer): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/** imgmanifest.imgUuidFromDockerDigests: the first 32 hex digits of sha256(digests joined). */
export function imgUuidFromDockerDigests(digests: string[]): string {
  return uuidFromHex(sha256(digests.join(' ')));
}

/** Builder.setImageId(): a random `sha256:<64 hex>` until the real digest is known. */
export function randomImageId(): string {
  return `sha256:${crypto.randomBytes(32).toString('hex')}`;
}

export function shortId(id: string | null): string {
  return (id ?? '').split(':').slice(-1)[0]!.replace('-', '').slice(0, 12);
}

function historyEntryFor(cmd: BuildCmd | null, image: DockerImage): HistoryEntry {
  const cc = image.container_config as { Cmd?: string[] } | undefined;
  const entry: HistoryEntry = { created: image.created, created_by: (cc?.Cmd ?? []).join(' ') };
  if (isMetadataCmd(cmd)) entry.empty_layer = true;
  if (image.author) entry.author = image.author;
  if (image.comment) entry.comment = image.comment;
  return entry;
}

/** `createDockerManifests`: the image (history, rootfs) and its v2 manifest for the last layer. */
export function createDockerManifests(layers: Layer[]): { image: DockerImage; configDigest: string } {
  const last = layers[layers.length - 1]!;
  const image = last.image!;
  image.history = layers.map((l) => l.historyEntry ?? historyEntryFor(l.cmd, l.image!));
  const diffIds = layers.filter((_l, i) => !image.history![i]!.empty_layer).map((l) => l.uncompressedDigest!);
  image.rootfs = { type: 'layers', diff_ids: diffIds };
  const imageStr = JSON.stringify(image);
  const configDigest = `sha256:${sha256(imageStr)}`;
  const manifest = {
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: imageStr.length, digest: configDigest },
    layers: layers
      .filter((l) => l.fileDigest)
      .map((l) => l.manifestLayerEntry ?? { digest: l.fileDigest!, mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.fileSize ?? 0 }),
  };
  const manifestStr = JSON.stringify(manifest, null, 4);
  last.image = structuredClone(image);
  last.imageDigest = configDigest;
  last.manifestStr = manifestStr;
  last.manifestDigest = `sha256:${sha256(manifestStr)}`;
  return { image: last.image, configDigest };
}

/** `createSdcDockerImage`: the `image_create` request sdc-docker answers. */
export async function createSdcDockerImage(layers: Layer[], isLastStep: boolean, pub: LayerPublisher): Promise<void> {
  const last = layers[layers.length - 1]!;
  if (!last.uuid) {
    const previous = layers[layers.length - 2];
    if (!previous?.uuid) throw new Error('no image uuid for a metadata layer');
    last.uuid = previous.uuid;
  }
  await pub.request({
    payload: {
      config_digest: last.imageDigest,
      head: isLastStep,
      image: last.image,
      image_uuid: last.uuid,
      manifest_digest: last.manifestDigest,
      manifest_str: last.manifestStr,
      size: layers.reduce((n, l) => n + (l.size ?? 0), 0),
    },
    type: 'image_create',
  });
}

/** A filesystem layer: publish `files` to IMGAPI, then manifests and `image_create`. */
export async function createFileLayer(
  layers: Layer[],
  files: readonly { name: string; node: FsNode }[],
  isLastStep: boolean,
  pub: LayerPublisher,
): Promise<void> {
  const layer = layers[layers.length - 1]!;
  const previous = layers[layers.length - 2];
  const image = layer.image!;
  const placeholder = crypto.randomUUID();
  const digest = layer.imageDigest ?? randomImageId();
  const manifest: Record<string, unknown> = {
    v: 2,
    uuid: placeholder,
    owner: pub.owner,
    name: 'docker-layer',
    version: shortId(digest),
    disabled: false,
    public: false,
    published_at: new Date(image.created ?? Date.now()).toISOString(),
    type: 'docker',
    os: 'linux',
    description: ((image.container_config as { Cmd?: string[] } | undefined)?.Cmd ?? []).join(' ').slice(0, 512),
    tags: { 'docker:repo': '', 'docker:id': digest, 'docker:architecture': image.architecture },
  };
  if (previous?.uuid) manifest.origin = previous.uuid;
  await pub.imgapi.importImage(placeholder, manifest);

  const tar = tarFromEntries(files);
  const gz = gzipSync(tar);
  layer.uncompressedDigest = `sha256:${sha256(tar)}`;
  layer.size = tar.length;
  layer.fileDigest = `sha256:${sha256(gz)}`;
  layer.fileSize = gz.length;
  const sha1 = crypto.createHash('sha1').update(gz).digest('hex');
  const query = { compression: 'gzip', sha1, size: String(gz.length) };
  const added = (await pub.imgapi.addFile(placeholder, query, gz, 60_000)) as { files?: { sha1?: string }[] } | undefined;
  if (added?.files?.length !== 1) throw new Error(`Expected one image file - got ${added?.files?.length ?? 0}`);
  if (added.files[0]!.sha1 !== sha1) throw new Error('imgapi sha1 mismatch - data corruption occured');

  createDockerManifests(layers);
  const layerDigests = layers.filter((l) => l.fileDigest).map((l) => l.fileDigest!);
  const update: Record<string, unknown> = { ...manifest, uuid: imgUuidFromDockerDigests(layerDigests) };
  if (layerDigests.length > 1) update.origin = imgUuidFromDockerDigests(layerDigests.slice(0, -1));
  update.tags = { ...(manifest.tags as object), 'docker:id': layer.imageDigest };
  update.version = shortId(layer.imageDigest);
  update.files = [{ ...(added.files[0] as object), digest: layer.fileDigest, uncompressedDigest: layer.uncompressedDigest }];
  for (const k of ['disabled', 'published_at', 'type', 'v', 'owner']) delete update[k];
  await pub.imgapi.updateImage(placeholder, update);
  layer.uuid = update.uuid as string;
  await pub.imgapi.activate(layer.uuid);
  await createSdcDockerImage(layers, isLastStep, pub);
}
