/**
 * A docker build on a mock CN: the steps of TritonDataCenter/sdc-docker-build lib/build.js
 * (the Builder the real docker-build.js drives), over the build context from the client and
 * the container model (docker/container-fs.ts) instead of a zone root.
 *
 * For each Dockerfile instruction: `Step N/M : <instruction>` on stdout; the cache lookup
 * (`find_cached_image`) unless `nocache`; the instruction; the layer (layers.ts);
 * ` ---> <short id>`. FROM asks sdc-docker to reprovision the build container
 * (`image_reprovision`) unless it is `scratch`; RUN asks it to run the command (`run`). ADD
 * and COPY copy from the context into the container (local files, directories, simple
 * wildcards; ADD also unpacks a local tar or tar.gz); remote URLs are refused as the real
 * builder refuses them. After the last step, the build asks sdc-docker to tag the result
 * (`build_finished`). The context and copy planning are context.ts, instruction
 * helpers words.ts, layers and IMGAPI layers.ts.
 */
import path from 'node:path';
import { parse as parseDockerfile } from 'docker-file-parser';
import { readTar, type ContainerFs, type FsNode } from '../docker/container-fs.js';
import { BuildContext } from './context.js';
import {
  createDockerManifests,
  createFileLayer,
  createSdcDockerImage,
  imgUuidFromDockerDigests,
  isMetadataCmd,
  randomImageId,
  shortId,
  type DockerImage,
  type Layer,
  type LayerPublisher,
} from './layers.js';
import { asArray, asObject, commandString, mergedEnv, parseJson, processWord, toCmd, type BuildCmd } from './words.js';

const DEFAULT_ARG_NAMES = ['HTTP_PROXY', 'HTTPS_PROXY', 'FTP_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'ftp_proxy', 'no_proxy'];
const VARIABLE_CMDS = ['ADD', 'ARG', 'COPY', 'ENV', 'EXPOSE', 'LABEL', 'ONBUILD', 'STOPSIGNAL', 'USER', 'VOLUME', 'WORKDIR'];

const DEFAULT_IMAGE_CONFIG = {
  AttachStdin: false,
  AttachStderr: false,
  AttachStdout: false,
  Cmd: null,
  Domainname: '',
  Entrypoint: null,
  Env: null,
  Hostname: '',
  Image: '',
  Labels: null,
  OnBuild: null,
  OpenStdin: false,
  StdinOnce: false,
  Tty: false,
  User: '',
  Volumes: null,
  WorkingDir: '',
};

/** sdc-docker's answer to `image_reprovision` and `find_cached_image`: an ImageV2 model. */
export interface ImageV2 {
  config_digest: string;
  image: DockerImage;
  image_uuid: string;
  manifest_str: string;
}

export interface BuildChannel {
  stdout(message: string): void;
  /** Send a task event to sdc-docker and wait for its `callback` (rejects with its error). */
  request(event: Record<string, unknown>): Promise<unknown>;
}

export interface BuildOptions {
  fs: ContainerFs;
  /** The build context as the client sent it (tar, maybe gzipped). */
  context: Buffer;
  maxContextBytes: number;
  payload: Record<string, unknown>;
  zoneUuid: string;
  scratchImageUuid: string;
  channel: BuildChannel;
  publisher: LayerPublisher;
  /** `run`: record the command in the container's metadata before sdc-docker starts it. */
  setRunMetadata(meta: Record<string, string>): Promise<void>;
  signal: AbortSignal;
  /** Wait out the time a real build takes for a Dockerfile step or the final image (the timing profile). */
  pace?(phase: 'step' | 'commit'): Promise<void>;
}

export class MockBuilder {
  private image: DockerImage = { architecture: 'amd64', config: structuredClone(DEFAULT_IMAGE_CONFIG) as Record<string, unknown>, os: 'linux', parent: null };
  private imageDigest: string | null = null;
  readonly layers: Layer[] = [];
  private stepNo = -1;
  private totalSteps = 0;
  private cmdSet = false;
  private buildArgs: Record<string, string | null> = {};
  private buildArgsPlusDefaults: Record<string, string | null> = {};
  private readonly cliBuildArgs: Record<string, string | null>;
  private readonly cliLabels: Record<string, string>;
  private readonly cacheEnabled: boolean;
  private cacheLastCmdCached = true;
  private scratchPending = false;
  private onBuildTriggers: string[] | null = null;
  private context: BuildContext | undefined;
  /** Files written by the current step: its layer. */
  private written: { name: string; node: FsNode }[] = [];

  constructor(private readonly o: BuildOptions) {
    this.cliBuildArgs = parseJson(o.payload.buildargs, {}) as Record<string, string | null>;
    const labels = parseJson(o.payload.labels, {}) as Record<string, string>;
    delete labels['com.joyent.package'];
    this.cliLabels = labels;
    this.cacheEnabled = !o.payload.nocache;
    for (const a of DEFAULT_ARG_NAMES) this.addArgEntry(a, null);
  }

  /** Run the whole build; resolves with the final image digest. */
  async build(): Promise<string> {
    const o = this.o;
    this.context = await BuildContext.read(o.context, o.maxContextBytes);
    const name = typeof o.payload.dockerfile === 'string' && o.payload.dockerfile ? o.payload.dockerfile : 'Dockerfile';
    const dockerfile = this.context.dockerfile(name);
    const commands = parseDockerfile(dockerfile, { includeComments: false });
    this.totalSteps = commands.length;
    for (const c of commands) {
      this.onBuildTriggers = null;
      await this.step(toCmd(c));
      await this.runOnBuildTriggers();
    }
    const unused = Object.keys(this.cliBuildArgs);
    if (unused.length > 0) throw new Error(`One or more build-args [${unused.join(',')}] were not consumed, failing build.`);
    if (this.layers.length === 0) throw new Error('No image was generated. Is your Dockerfile empty?');
    await o.pace?.('commit');
    return this.layers[this.layers.length - 1]!.imageDigest!;
  }

  /**
   * `docker commit` (Builder.startCommit and docker-build.js commitImage): the container's
   * image with `changes` applied and one layer of everything written into the container.
   */
  async commit(fromImg: ImageV2, changes: string[], meta: { author?: string; comment?: string }): Promise<string> {
    this.setBaseImg(null, fromImg);
    const commands = parseDockerfile(changes.join('\n'), { includeComments: false });
    this.totalSteps = commands.length;
    const forbidden = commands.find((c) => ['ADD', 'ARG', 'COPY', 'FROM', 'MAINTAINER', 'RUN'].includes(c.name));
    if (forbidden) throw new Error(`${forbidden.name} is not a valid change command`);
    for (const c of commands) await this.actualStep(toCmd(c));
    this.setParentId(this.imageDigest);
    this.setImageId();
    this.image.created = new Date().toISOString();
    this.layers.push({ cmd: null, image: structuredClone(this.image), imageDigest: this.imageDigest });
    const image = this.layers[this.layers.length - 1]!.image!;
    if (meta.author) image.author = meta.author;
    if (meta.comment) image.comment = meta.comment;
    for (const cfg of [image.config, image.container_config]) {
      const labels = cfg?.Labels as Record<string, unknown> | null | undefined;
      if (labels) delete labels['com.joyent.package'];
    }
    this.stepNo = this.totalSteps - 1;
    await this.o.pace?.('commit');
    await createFileLayer(this.layers, this.o.fs.writtenFiles(), true, this.o.publisher);
    return this.layers[this.layers.length - 1]!.imageDigest!;
  }

  private isLastStep(): boolean {
    return this.stepNo === this.totalSteps - 1;
  }

  private setImageId(id?: string | null): void {
    this.imageDigest = id === undefined ? randomImageId() : id;
  }

  private setParentId(id: string | null): void {
    this.image.parent = id;
    this.image.config.Image = id;
    if (this.image.container_config) this.image.container_config.Image = id;
  }

  private async step(cmd: BuildCmd): Promise<void> {
    this.o.signal.throwIfAborted();
    await this.o.pace?.('step');
    this.stepNo++;
    this.setParentId(this.imageDigest);
    this.setImageId();
    this.o.channel.stdout(`Step ${this.stepNo + 1}/${this.totalSteps} : ${commandString(cmd)}\n`);
    if (this.stepNo === 0 && cmd.name !== 'FROM') throw new Error('Please provide a source image with `from` prior to commit');
    this.written = [];
    this.preStep(cmd);
    await this.checkCache(cmd);
    if (!cmd.ctx.isCached || cmd.name === 'ARG') await this.actualStep(cmd);
    await this.postStep(cmd);
    this.o.channel.stdout(this.imageDigest === null ? ' --->\n' : ` ---> ${shortId(this.imageDigest)}\n`);
  }

  private preStep(cmd: BuildCmd): void {
    if (this.isLastStep() && Object.keys(this.cliLabels).length > 0) this.addConfigMap(this.cliLabels, 'Labels');
    if (VARIABLE_CMDS.includes(cmd.name) && /[\\$'"]/.test(cmd.raw)) {
      const env = mergedEnv((this.image.config.Env as string[] | null) ?? [], this.buildArgsPlusDefaults);
      if (Array.isArray(cmd.args)) cmd.args = cmd.args.map((w) => processWord(w, env));
      else if (typeof cmd.args === 'string') cmd.args = processWord(cmd.args, env);
      else cmd.args = Object.fromEntries(Object.entries(cmd.args).map(([k, v]) => [k, processWord(v, env)]));
    }
    if (cmd.name === 'CMD' || cmd.name === 'ENTRYPOINT' || cmd.name === 'RUN') {
      if (typeof cmd.args === 'string') cmd.args = ['/bin/sh', '-c', cmd.args];
    } else if (cmd.name === 'EXPOSE') {
      cmd.args = asArray(cmd).map((s) => s.toLowerCase());
    } else if (cmd.name === 'ADD' || cmd.name === 'COPY') {
      cmd.ctx.copyHash = this.copyPlan(cmd).hash;
    }
  }

  private async checkCache(cmd: BuildCmd): Promise<void> {
    if (cmd.name === 'FROM' || !this.cacheEnabled || !this.cacheLastCmdCached) return;
    const lastWasCached = this.cacheLastCmdCached;
    const cached = (await this.o.channel.request({
      cmd: this.nopCmd(cmd).join(' '),
      labels: this.image.config.Labels,
      parentDigest: this.image.parent,
      type: 'find_cached_image',
    })) as ImageV2 | null | undefined;
    if (cached && typeof cached === 'object') {
      cmd.ctx.isCached = true;
      this.o.channel.stdout(' ---> Using cache\n');
      this.setBaseImg(cmd, cached);
      return;
    }
    this.cacheLastCmdCached = false;
    const lastLayer = this.layers[this.layers.length - 1];
    if (!lastLayer) return;
    if (lastWasCached && lastLayer.cmd && lastLayer.cmd.name !== 'FROM') {
      // Carry on from the last cached image: the build container must hold its files.
      await this.reprovision(lastLayer.cmd, this.image.parent ?? '');
      this.setParentId(this.imageDigest);
      this.setImageId();
    }
  }

  private async reprovision(cmd: BuildCmd, imageName: string): Promise<void> {
    const img = (await this.o.channel.request({ cmdName: cmd.name, imageName, type: 'image_reprovision' })) as ImageV2;
    this.setBaseImg(cmd, img);
  }

  /** docker-build.js builderSetBaseImg: the layers of a base (or cached) image. */
  private setBaseImg(cmd: BuildCmd | null, img: ImageV2): void {
    if (!img || typeof img !== 'object' || !img.image || !Array.isArray(img.image.history)) {
      throw new Error('image has no history');
    }
    const rootfs = img.image.rootfs as { diff_ids?: string[] } | undefined;
    const diffIds = rootfs?.diff_ids ?? [];
    let manifest: { layers?: { digest: string; mediaType: string; size: number }[] };
    try {
      manifest = JSON.parse(img.manifest_str) as typeof manifest;
    } catch (ex) {
      throw new Error(`Unable to parse img.manifest_str: ${String(ex)}`);
    }
    const entries = manifest.layers ?? [];
    const digests: string[] = [];
    let idx = 0;
    this.layers.length = 0;
    for (const h of img.image.history) {
      const layer: Layer = { cmd: null, historyEntry: h, image: null, imageDigest: null };
      if (!h.empty_layer && idx < entries.length) {
        const e = entries[idx]!;
        layer.fileDigest = e.digest;
        layer.manifestLayerEntry = e;
        layer.size = e.size;
        layer.uncompressedDigest = diffIds[idx];
        digests.push(e.digest);
        layer.uuid = imgUuidFromDockerDigests(digests);
        idx++;
      }
      this.layers.push(layer);
    }
    const last = this.layers[this.layers.length - 1];
    if (last) {
      last.cmd = cmd;
      last.image = structuredClone(img.image);
      last.imageDigest = img.config_digest;
      last.uuid = img.image_uuid;
    }
    this.image = structuredClone(img.image);
    this.setImageId(img.config_digest);
  }

  private async actualStep(cmd: BuildCmd): Promise<void> {
    const cfg = this.image.config;
    const a = cmd.args;
    switch (cmd.name) {
      case 'FROM':
        if (a === 'scratch') {
          this.setImageId(null);
          this.setParentId(null);
          return;
        }
        await this.reprovision(cmd, String(a));
        this.onBuildTriggers = (this.image.config.OnBuild as string[] | null) ?? null;
        this.image.config.OnBuild = null;
        return;
      case 'ARG': {
        const args = asArray(cmd);
        if (args.length !== 1) throw new Error('ARG requires exactly one argument definition');
        const [name, ...rest] = args[0]!.split('=');
        this.addArgEntry(name!, rest.length ? rest.join('=') : null);
        return;
      }
      case 'CMD':
        cfg.Cmd = asArray(cmd).slice();
        this.cmdSet = true;
        return;
      case 'ENTRYPOINT':
        cfg.Entrypoint = asArray(cmd).slice();
        if (!this.cmdSet) cfg.Cmd = null;
        return;
      case 'ENV': {
        const env = ((cfg.Env as string[] | null) ?? []).slice();
        for (const [k, v] of Object.entries(asObject(cmd))) {
          const i = env.findIndex((e) => e.startsWith(`${k}=`));
          if (i >= 0) env[i] = `${k}=${v}`;
          else env.push(`${k}=${v}`);
        }
        cfg.Env = env;
        return;
      }
      case 'EXPOSE': {
        const ports: string[] = [];
        for (let p of asArray(cmd)) {
          let proto = 'tcp';
          if (p.includes('/')) [p, proto] = p.split('/') as [string, string];
          const range = p.split('-');
          if (range.length >= 2) {
            const [b, e] = [Number.parseInt(range[0]!, 10), Number.parseInt(range[1]!, 10)];
            if (e < b) throw new Error(`Invalid containerPort: ${p}`);
            for (let i = b; i <= e; i++) ports.push(`${i}/${proto}`);
          } else ports.push(`${p}/${proto}`);
        }
        this.addConfigArrayAsMap(ports, 'ExposedPorts');
        return;
      }
      case 'LABEL':
        this.addConfigMap(asObject(cmd), 'Labels');
        return;
      case 'MAINTAINER':
        this.image.author = String(a);
        return;
      case 'ONBUILD': {
        const sub = a as unknown as { raw?: string };
        cfg.OnBuild = [...((cfg.OnBuild as string[] | null) ?? []), String(sub.raw ?? '')];
        return;
      }
      case 'STOPSIGNAL':
        cfg.StopSignal = String(a);
        return;
      case 'USER':
        cfg.User = String(a);
        return;
      case 'VOLUME': {
        const vols = asArray(cmd);
        if (!vols[0]) throw new Error('Volume specified can not be an empty string');
        this.addConfigArrayAsMap(vols, 'Volumes');
        return;
      }
      case 'WORKDIR': {
        const w = String(a);
        let dir = path.posix.normalize(w.startsWith('/') ? w : path.posix.join(String(cfg.WorkingDir ?? ''), w));
        if (dir.length > 1 && dir.endsWith('/')) dir = dir.slice(0, -1);
        cfg.WorkingDir = dir;
        return;
      }
      case 'ADD':
      case 'COPY':
        await this.performCopy(cmd);
        return;
      case 'RUN':
        await this.run(cmd);
        return;
      default:
        throw new Error(`Unknown instruction: ${cmd.name}`);
    }
  }

  private async postStep(cmd: BuildCmd): Promise<void> {
    this.image.container_config = structuredClone(this.image.config);
    if (!cmd.ctx.isCached) {
      this.image.container_config.Cmd = this.nopCmd(cmd);
      this.image.created = new Date().toISOString();
    }
    if (cmd.name !== 'FROM') this.layers.push({ cmd, image: structuredClone(this.image), imageDigest: this.imageDigest });
    if (cmd.ctx.isCached) return;
    if (this.stepNo === 0) {
      if (cmd.args === 'scratch') this.scratchPending = true;
      return;
    }
    if (this.scratchPending) {
      this.layers[this.layers.length - 1]!.uuid = this.o.scratchImageUuid;
      this.scratchPending = false;
    }
    await this.createLayer(cmd);
  }

  private async createLayer(cmd: BuildCmd): Promise<void> {
    if (isMetadataCmd(cmd)) {
      const { image, configDigest } = createDockerManifests(this.layers);
      this.image = structuredClone(image);
      this.setImageId(configDigest);
      await createSdcDockerImage(this.layers, this.isLastStep(), this.o.publisher);
      return;
    }
    await createFileLayer(this.layers, this.written, this.isLastStep(), this.o.publisher);
    const last = this.layers[this.layers.length - 1]!;
    this.image = structuredClone(last.image!);
    this.setImageId(last.imageDigest);
  }

  private async runOnBuildTriggers(): Promise<void> {
    const triggers = this.onBuildTriggers;
    this.onBuildTriggers = null;
    if (!triggers || triggers.length === 0) return;
    this.image.config.OnBuild = null;
    this.o.channel.stdout(`# Executing ${triggers.length} build triggers\n`);
    for (const t of triggers) {
      const cmds = parseDockerfile(t, { includeComments: false });
      if (cmds.length !== 1) throw new Error(`Expected 1 command for OnBuild trigger ${JSON.stringify(t)}, got ${cmds.length}`);
      await this.step(toCmd(cmds[0]!));
    }
    this.image.config.OnBuild = null;
  }

  private addArgEntry(name: string, value: string | null): void {
    if (Object.hasOwn(this.cliBuildArgs, name)) {
      value = this.cliBuildArgs[name] ?? null;
      delete this.cliBuildArgs[name];
      this.buildArgs[name] = value;
    } else if (value !== null) {
      this.buildArgs[name] = value;
    }
    this.buildArgsPlusDefaults[name] = value;
  }

  private addConfigMap(args: Record<string, string>, prop: string): void {
    const cur = (this.image.config[prop] as Record<string, string> | null) ?? {};
    this.image.config[prop] = { ...cur, ...args };
  }

  private addConfigArrayAsMap(args: string[], prop: string): void {
    const cur = (this.image.config[prop] as Record<string, object> | null) ?? {};
    for (const v of args) cur[v] = {};
    this.image.config[prop] = cur;
  }

  /** The `#(nop)` command docker records for a step (and looks the cache up by). */
  private nopCmd(cmd: BuildCmd): string[] {
    if (cmd.name === 'RUN') {
      const keys = Object.keys(this.buildArgs).filter((k) => this.buildArgs[k] !== null);
      const prefix = keys.length ? [`|${keys.length}`, ...keys.map((k) => `${k}=${this.buildArgs[k]}`)] : [];
      if (Array.isArray(cmd.args)) return [...prefix, ...cmd.args];
      return [...prefix, '/bin/sh', '-c', `#(nop) ${commandString(cmd)}`];
    }
    if (cmd.name === 'ADD' || cmd.name === 'COPY') {
      const args = asArray(cmd);
      return ['/bin/sh', '-c', `#(nop) ${cmd.name} ${cmd.ctx.copyHash ?? ''} in ${args[args.length - 1]}`];
    }
    return ['/bin/sh', '-c', `#(nop) ${commandString(cmd)}`];
  }

  // ---- RUN

  private async run(cmd: BuildCmd): Promise<void> {
    const args = asArray(cmd);
    const cfg = this.image.config;
    const env = mergedEnv((cfg.Env as string[] | null) ?? [], this.buildArgs);
    const workdir = (cfg.WorkingDir as string) || '/';
    const user = (cfg.User as string) || undefined;
    const meta: Record<string, string> = { 'docker:cmd': JSON.stringify(args), 'docker:env': JSON.stringify(env) };
    if (user) meta['docker:user'] = user;
    if (workdir) meta['docker:workdir'] = workdir;
    await this.o.setRunMetadata(meta);
    this.o.channel.stdout(` ---> Running in ${shortId(this.o.zoneUuid)}\n`);
    const result = (await this.o.channel.request({ cmd: args, workdir, env, type: 'run', user })) as { exitCode?: unknown } | undefined;
    const code = result?.exitCode;
    if (code !== 0) throw new Error(`The command '${args.join(' ')}' returned a non-zero code: ${String(code)}`);
  }

  private copyPlan(cmd: BuildCmd) {
    if (!this.context) throw new Error('no build context');
    return this.context.plan(cmd, String(this.image.config.WorkingDir || '/'), (p) => {
      const found = this.o.fs.lookup(p);
      return 'node' in found && found.node.type === 'dir';
    });
  }

  private writeFile(abs: string, node: FsNode): void {
    if (!this.o.fs.write(abs, node)) throw new Error(`cannot write ${abs}: No space left on device`);
    this.written.push({ name: abs.replace(/^\//, ''), node });
  }

  private async performCopy(cmd: BuildCmd): Promise<void> {
    const { sources, dest } = this.copyPlan(cmd);
    const destIsDir = dest.endsWith('/');
    if (cmd.name === 'ADD' && sources.length === 1) {
      const node = this.context!.node(sources[0]!)!;
      const isArchive = node.type === 'file' && (sources[0]!.endsWith('.tar') || (node.content[0] === 0x1f && node.content[1] === 0x8b));
      if (isArchive && node.type === 'file') {
        const into = destIsDir ? dest : path.posix.dirname(dest);
        for (const m of await readTar(node.content, this.o.maxContextBytes)) {
          this.writeFile(path.posix.join(into, m.name), m.node);
        }
        return;
      }
    }
    for (const rel of sources) {
      const node = this.context!.node(rel)!;
      if (node.type !== 'dir') {
        const target = destIsDir ? path.posix.join(dest, path.posix.basename(rel)) : dest;
        this.writeFile(target, node);
        continue;
      }
      // A directory's contents (not the directory itself) go into the destination.
      for (const [sub, n] of this.context!.files(rel)) this.writeFile(path.posix.join(dest, sub), n);
    }
  }
}

