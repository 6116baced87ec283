/**
 * What a mock container's root filesystem holds, for the docker tasks (exec's `cat`, copy's tar
 * streams, build's ADD/COPY). A real CN reads `/zones/<uuid>/root`; a mock CN has no zone root,
 * so the tree is made of:
 *
 * - the files a container's setup writes, from the VM's model: `/etc/hostname` (its
 *   `hostname`, else the zone name), `/etc/hosts`, `/etc/resolv.conf` (its `resolvers`), and
 *   the usual top-level directories;
 * - on top, what was written into the container since (docker_copy in write mode, docker_build
 *   ADD/COPY), kept in memory per CN (`ContainerFiles`), bounded in bytes, and lost when the
 *   daemon restarts. A reprovision (new image) or a new VM under the same uuid starts from the
 *   image again; the files of destroyed VMs are dropped when the budget runs out.
 *
 * Paths are normalised as the real helpers do (`path.normalize('/' + p)`). Symlinks are not
 * followed (an lstat view), as the real copy stat is.
 */
import path from 'node:path';
import { Header, Pax, Parser, type ReadEntry } from 'tar';
import type { Vm, VmStore } from '../../../vmadm/types.js';
import type { CnTaskState } from '../types.js';

export type FsNode =
  | { type: 'file'; content: Buffer; mode: number; mtime: Date }
  | { type: 'dir'; mode: number; mtime: Date }
  | { type: 'symlink'; target: string; mtime: Date };

/** Bytes of written files one CN keeps for all its containers together. */
export const CONTAINER_FILES_MAX_BYTES = 32 * 1024 * 1024;

/** Which root filesystem a VM has: a new VM or a reprovision gets a fresh one. */
function rootStamp(vm: Vm): string {
  return `${String(vm.create_timestamp ?? '')}|${String(vm.image_uuid ?? '')}`;
}

/** Files written into the containers of one CN. */
export class ContainerFiles {
  private readonly byVm = new Map<string, { stamp: string; files: Map<string, FsNode> }>();
  private bytes = 0;

  /** @param exists whether a VM is still on the CN (files of gone ones are dropped when space runs out) */
  constructor(
    private readonly exists: (vmUuid: string) => boolean,
    readonly maxBytes = CONTAINER_FILES_MAX_BYTES,
  ) {}

  get totalBytes(): number {
    return this.bytes;
  }

  /** The files written into this VM's current root filesystem. */
  layer(vm: Vm): ReadonlyMap<string, FsNode> | undefined {
    const entry = this.byVm.get(vm.uuid);
    if (!entry) return undefined;
    if (entry.stamp !== rootStamp(vm)) {
      this.forget(vm.uuid);
      return undefined;
    }
    return entry.files;
  }

  /** Store `node` at `p`; false (nothing stored) when it would pass the CN's byte budget. */
  put(vm: Vm, p: string, node: FsNode): boolean {
    let entry = this.layer(vm) ? this.byVm.get(vm.uuid) : undefined;
    const old = entry?.files.get(p);
    const delta = sizeOf(node) - (old ? sizeOf(old) : 0);
    if (delta > 0 && this.bytes + delta > this.maxBytes) {
      for (const uuid of [...this.byVm.keys()]) if (uuid !== vm.uuid && !this.exists(uuid)) this.forget(uuid);
      if (this.bytes + delta > this.maxBytes) return false;
    }
    if (!entry) {
      entry = { stamp: rootStamp(vm), files: new Map() };
      this.byVm.set(vm.uuid, entry);
    }
    entry.files.set(p, node);
    this.bytes += delta;
    return true;
  }

  /** The VM is gone: drop what was written into it. */
  forget(vmUuid: string): void {
    const entry = this.byVm.get(vmUuid);
    if (!entry) return;
    for (const n of entry.files.values()) this.bytes -= sizeOf(n);
    this.byVm.delete(vmUuid);
  }
}

function sizeOf(n: FsNode): number {
  return n.type === 'file' ? n.content.length : 0;
}

/** Each CN's container files, made on first use and gone with its cn-agent slot. */
const filesByCn = new WeakMap<CnTaskState, ContainerFiles>();

/** The CN's container files (made on first use). */
export function containerFilesOf(state: CnTaskState, vms: Pick<VmStore, 'get'>): ContainerFiles {
  let files = filesByCn.get(state);
  if (!files) {
    files = new ContainerFiles((uuid) => vms.get(uuid, { include_dni: true }) !== undefined);
    filesByCn.set(state, files);
  }
  return files;
}

/** `path.normalize('/' + p)`, what the real copy helpers stat. */
export function normalizeContainerPath(p: string): string {
  return path.posix.normalize(`/${p}`);
}

export type Lookup = { node: FsNode } | { error: 'ENOENT' | 'ENOTDIR' };

export class ContainerFs {
  private readonly base: Map<string, FsNode>;

  /**
   * @param current the VM as it is now, for a long-lived view (a build, whose FROM reprovisions
   *   the container while it runs); `vm` otherwise
   */
  constructor(
    readonly vm: Vm,
    private readonly files: ContainerFiles,
    private readonly current?: () => Vm | undefined,
  ) {
    this.base = baseTree(vm);
  }

  private live(): Vm {
    return this.current?.() ?? this.vm;
  }

  get hostname(): string {
    return hostnameOf(this.vm);
  }

  private node(p: string): FsNode | undefined {
    return this.files.layer(this.live())?.get(p) ?? this.base.get(p);
  }

  /** lstat: the node at `p`, or why there is none. */
  lookup(p: string): Lookup {
    const norm = normalizeContainerPath(p);
    if (norm !== '/') {
      const parts = norm.split('/').slice(1);
      let cur = '';
      for (let i = 0; i < parts.length - 1; i++) {
        cur += `/${parts[i]}`;
        const n = this.node(cur);
        if (!n) return { error: 'ENOENT' };
        if (n.type !== 'dir') return { error: 'ENOTDIR' };
      }
    }
    const n = this.node(norm);
    return n ? { node: n } : { error: 'ENOENT' };
  }

  /** Names in directory `dir`, sorted. */
  children(dir: string): string[] {
    const norm = normalizeContainerPath(dir);
    const prefix = norm === '/' ? '/' : `${norm}/`;
    const names = new Set<string>();
    const add = (p: string) => {
      if (p.length > prefix.length && p.startsWith(prefix) && !p.slice(prefix.length).includes('/')) {
        names.add(p.slice(prefix.length));
      }
    };
    for (const p of this.base.keys()) add(p);
    for (const p of this.files.layer(this.live())?.keys() ?? []) add(p);
    return [...names].sort();
  }

  /**
   * Write a node; missing parent directories are made (as gtar does for archive members).
   * False when the CN's byte budget is spent, or a parent is not a directory.
   */
  write(p: string, node: FsNode): boolean {
    const norm = normalizeContainerPath(p);
    if (norm === '/') return node.type === 'dir';
    const parts = norm.split('/').slice(1);
    let cur = '';
    for (let i = 0; i < parts.length - 1; i++) {
      cur += `/${parts[i]}`;
      const n = this.node(cur);
      if (!n) {
        if (!this.files.put(this.live(), cur, { type: 'dir', mode: 0o755, mtime: node.mtime })) return false;
      } else if (n.type !== 'dir') {
        return false;
      }
    }
    const existing = this.node(norm);
    if (existing?.type === 'dir' && node.type === 'dir') return true;
    return this.files.put(this.live(), norm, node);
  }

  /** What was written into this container, as archive members relative to its root. */
  writtenFiles(): { name: string; node: FsNode }[] {
    const layer = this.files.layer(this.live());
    if (!layer) return [];
    return [...layer.keys()].sort().map((p) => ({ name: p.replace(/^\//, ''), node: layer.get(p)! }));
  }

  /** Every path under `p` (itself first), depth first, children sorted. */
  walk(p: string): { path: string; node: FsNode }[] {
    const out: { path: string; node: FsNode }[] = [];
    const visit = (cur: string) => {
      const n = this.node(cur);
      if (!n) return;
      out.push({ path: cur, node: n });
      if (n.type === 'dir') for (const name of this.children(cur)) visit(cur === '/' ? `/${name}` : `${cur}/${name}`);
    };
    visit(normalizeContainerPath(p));
    return out;
  }
}

export function hostnameOf(vm: Vm): string {
  return typeof vm.hostname === 'string' && vm.hostname ? vm.hostname : vm.uuid;
}

/** The files a container starts with, from its VM's model. */
function baseTree(vm: Vm): Map<string, FsNode> {
  const created = new Date(typeof vm.create_timestamp === 'string' ? vm.create_timestamp : 0);
  const mtime = Number.isNaN(created.getTime()) ? new Date(0) : created;
  const tree = new Map<string, FsNode>();
  const dir = (p: string, mode = 0o755) => tree.set(p, { type: 'dir', mode, mtime });
  const file = (p: string, text: string) => tree.set(p, { type: 'file', content: Buffer.from(text), mode: 0o644, mtime });
  for (const d of ['/', '/bin', '/dev', '/etc', '/home', '/lib', '/proc', '/root', '/sbin', '/usr', '/usr/bin', '/usr/sbin', '/var', '/var/log']) {
    dir(d, d === '/root' ? 0o700 : 0o755);
  }
  dir('/tmp', 0o1777);
  const host = hostnameOf(vm);
  file('/etc/hostname', `${host}\n`);
  const ips = (vm.nics ?? []).map((n) => (typeof n.ip === 'string' ? n.ip : undefined)).filter((ip): ip is string => !!ip && ip !== 'dhcp');
  file('/etc/hosts', ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback', ...ips.map((ip) => `${ip}\t${host}`), ''].join('\n'));
  const resolvers = Array.isArray(vm.resolvers) ? vm.resolvers.filter((r) => typeof r === 'string') : [];
  file('/etc/resolv.conf', resolvers.map((r) => `nameserver ${r}\n`).join(''));
  return tree;
}

// ---- tar, as `gtar cf - -C <dir> <name>` writes and `gtar xf -` reads

const BLOCK = 512;

function header(name: string, node: FsNode): Buffer {
  const data = {
    path: name,
    mode: node.type === 'symlink' ? 0o777 : node.mode & 0o7777,
    uid: 0,
    gid: 0,
    uname: 'root',
    gname: 'root',
    size: node.type === 'file' ? node.content.length : 0,
    mtime: node.mtime,
    type: node.type === 'file' ? ('File' as const) : node.type === 'dir' ? ('Directory' as const) : ('SymbolicLink' as const),
    ...(node.type === 'symlink' ? { linkpath: node.target } : {}),
  };
  const h = new Header(data);
  const block = Buffer.alloc(BLOCK);
  const needPax = h.encode(block, 0);
  return needPax ? Buffer.concat([new Pax(data).encode(), block]) : block;
}

/**
 * The archive of `p` (and everything under it) with member names relative to its parent
 * directory, as the real copy-out runs `gtar cf - -C $(dirname p) $(basename p)`.
 */
export function tarOf(fs: ContainerFs, p: string): Buffer {
  const norm = normalizeContainerPath(p);
  const parent = path.posix.dirname(norm);
  return tarFromEntries(
    fs.walk(norm).map(({ path: abs, node }) => {
      let name = norm === '/' ? `.${abs === '/' ? '' : abs}` : path.posix.relative(parent, abs);
      if (name === '') name = '.';
      return { name, node };
    }),
  );
}

/** A GNU-tar-shaped archive of these members, in this order. */
export function tarFromEntries(entries: readonly { name: string; node: FsNode }[]): Buffer {
  const chunks: Buffer[] = [];
  for (const { name, node } of entries) {
    chunks.push(header(node.type === 'dir' && !name.endsWith('/') ? `${name}/` : name, node));
    if (node.type === 'file' && node.content.length > 0) {
      chunks.push(node.content);
      const pad = (BLOCK - (node.content.length % BLOCK)) % BLOCK;
      if (pad) chunks.push(Buffer.alloc(pad));
    }
  }
  // GNU tar ends with two zero blocks and pads to its 10240-byte record.
  chunks.push(Buffer.alloc(2 * BLOCK));
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const record = 20 * BLOCK;
  const pad = (record - (total % record)) % record;
  if (pad) chunks.push(Buffer.alloc(pad));
  return Buffer.concat(chunks);
}

/** One member of an archive read with `readTar`. */
export interface TarMember {
  /** As in the archive, without a leading `./` or `/`. */
  name: string;
  node: FsNode;
}

export class TarTooLargeError extends Error {}

/**
 * Read an archive (plain or compressed: the tar parser detects gzip) from chunks, keeping at
 * most `maxBytes` of file content.
 */
export function readTar(data: Buffer, maxBytes: number): Promise<TarMember[]> {
  return new Promise((resolve, reject) => {
    const members: TarMember[] = [];
    let kept = 0;
    let failed: Error | undefined;
    const parser = new Parser({
      strict: false,
      onReadEntry: (entry: ReadEntry) => {
        const name = entry.path.replace(/^(\.\/|\/)+/, '');
        const mtime = entry.mtime ?? new Date();
        if (entry.type === 'Directory') {
          if (name) members.push({ name, node: { type: 'dir', mode: entry.mode ?? 0o755, mtime } });
          entry.resume();
        } else if (entry.type === 'SymbolicLink') {
          members.push({ name, node: { type: 'symlink', target: entry.linkpath ?? '', mtime } });
          entry.resume();
        } else if (entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile') {
          const parts: Buffer[] = [];
          entry.on('data', (c: Buffer) => {
            kept += c.length;
            if (kept > maxBytes) failed ??= new TarTooLargeError(`archive holds more than ${maxBytes} bytes`);
            else parts.push(c);
          });
          entry.on('end', () => {
            members.push({ name, node: { type: 'file', content: Buffer.concat(parts), mode: entry.mode ?? 0o644, mtime } });
          });
        } else {
          entry.resume();
        }
      },
    });
    parser.on('error', (err: Error) => (failed ??= err));
    parser.on('end', () => (failed ? reject(failed) : resolve(members)));
    parser.end(data);
  });
}
