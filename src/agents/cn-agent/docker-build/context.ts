/**
 * The build context a client uploads to docker_build, and what ADD / COPY take from it
 * (sdc-docker-build lib/build.js getCopyInfo, calculateCopyInfo, infoForWildcardCopy): which
 * context paths a step copies, where to, and the hash the build cache keys on. Remote URLs are
 * refused as the real builder refuses them.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { readTar, type FsNode } from '../docker/container-fs.js';
import { asArray, type BuildCmd } from './words.js';

const MAX_DOCKERFILE_LENGTH = 10 * 1024 * 1024;

export interface CopyPlan {
  /** Context paths ('' is the context root). */
  sources: string[];
  /** Container path; a trailing `/` means "into this directory". */
  dest: string;
  hash: string;
}

export class BuildContext {
  private constructor(private readonly tree: Map<string, FsNode>) {}

  /** Read the uploaded archive (tar, maybe gzipped). */
  static async read(data: Buffer, maxBytes: number): Promise<BuildContext> {
    const tree = new Map<string, FsNode>();
    for (const m of await readTar(data, maxBytes)) tree.set(path.posix.normalize(m.name).replace(/\/$/, ''), m.node);
    return new BuildContext(tree);
  }

  /** `readDockerfile`: the named Dockerfile (or `dockerfile`), never outside the context. */
  dockerfile(name: string): string {
    const names = name === 'Dockerfile' ? [name, 'dockerfile'] : [name];
    for (const n of names) {
      const rel = path.posix.normalize(n).replace(/^(\.\/|\/)+/, '');
      if (rel.startsWith('..')) throw new Error(`Forbidden path outside the build context: ${n} `);
      const node = this.tree.get(rel);
      if (!node || node.type !== 'file') continue;
      if (node.content.length > MAX_DOCKERFILE_LENGTH) throw new Error(`Dockerfile exceeds max length: ${node.content.length}`);
      const text = node.content.toString('utf8');
      if (!text) throw new Error(`The Dockerfile (${name}) cannot be empty`);
      return text;
    }
    throw new Error(`Error: No such file or directory '${name}'`);
  }

  node(rel: string): FsNode | undefined {
    if (rel === '' || rel === '.') return { type: 'dir', mode: 0o755, mtime: new Date() };
    const n = this.tree.get(rel);
    if (n) return n;
    // A directory only implied by its members' paths.
    for (const k of this.tree.keys()) if (k.startsWith(`${rel}/`)) return { type: 'dir', mode: 0o755, mtime: new Date() };
    return undefined;
  }

  children(rel: string): string[] {
    const prefix = rel === '' || rel === '.' ? '' : `${rel}/`;
    const names = new Set<string>();
    for (const k of this.tree.keys()) {
      if (k.startsWith(prefix) && k.length > prefix.length) names.add(k.slice(prefix.length).split('/')[0]!);
    }
    return [...names].sort();
  }

  /** Every file under a context path: [relative to it, node]. */
  files(rel: string): [string, FsNode][] {
    const node = this.node(rel);
    if (!node) return [];
    if (node.type !== 'dir') return [['', node]];
    const out: [string, FsNode][] = [];
    for (const c of this.children(rel)) {
      const child = rel === '' || rel === '.' ? c : `${rel}/${c}`;
      for (const [sub, n] of this.files(child)) out.push([sub ? `${c}/${sub}` : c, n]);
    }
    return out;
  }

  /**
   * `getCopyInfo`: the sources, where they go, and the hash the cache keys on.
   * @param workdir the image's WorkingDir (a relative destination is under it)
   * @param isContainerDir whether a container path is a directory (a lone source copied to it goes inside)
   */
  plan(cmd: BuildCmd, workdir: string, isContainerDir: (p: string) => boolean): CopyPlan {
    const args = asArray(cmd);
    if (args.length < 2) throw new Error(`Invalid ${cmd.name} format - at least two arguments required`);
    let dest = args[args.length - 1]!;
    if (!dest.startsWith('/')) dest = path.posix.join(workdir || '/', dest);
    const hadSlash = dest.endsWith('/');
    dest = path.posix.normalize(dest) + (hadSlash && !path.posix.normalize(dest).endsWith('/') ? '/' : '');
    const srcs = args.slice(0, -1);
    if (srcs.length === 1 && !dest.endsWith('/') && isContainerDir(dest)) dest += '/';
    const sources: string[] = [];
    for (let s of srcs) {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
        if (cmd.name !== 'ADD') throw new Error(`Source can't be a URL for ${cmd.name}`);
        throw new Error(`Not implemented: Add Remote: ${JSON.stringify({ name: cmd.name, args: cmd.args, raw: cmd.raw })}`);
      }
      if (s.startsWith('/') && s.length > 1) s = s.slice(1);
      if (s.startsWith('./')) s = s.slice(2);
      const rel = s === '/' ? '' : path.posix.normalize(s).replace(/\/$/, '');
      if (rel === '..' || rel.startsWith('../')) throw new Error(`Forbidden path outside the build context: ${s} `);
      if (/[*?[]/.test(rel)) {
        sources.push(...this.glob(rel));
        continue;
      }
      if (!this.node(rel)) throw new Error(`stat ${s}: no such file or directory`);
      sources.push(rel);
    }
    if (sources.length === 0) throw new Error('No source files were specified');
    if (sources.length > 1 && !dest.endsWith('/')) {
      throw new Error(`When using ${cmd.name} with more than one source file, the destination must be a directory and end with a /`);
    }
    const hashes = sources.map((rel) => {
      const node = this.node(rel)!;
      if (node.type !== 'dir') return `file:${fileChecksum(node)}`;
      const sums = this.files(rel).map(([, n]) => fileChecksum(n)).sort();
      return `dir:${crypto.createHash('sha256').update(sums.join(',')).digest('hex')}`;
    });
    const hash = hashes.length > 1 ? `multi:${crypto.createHash('sha256').update(hashes.join(',')).digest('hex')}` : hashes[0]!;
    return { sources, dest, hash };
  }

  /** Context paths matching a pattern, one path component at a time (minimatch-style `*`, `?`, `[...]`). */
  glob(pattern: string): string[] {
    let paths = [''];
    const parts = pattern.split('/');
    parts.forEach((part, i) => {
      const re = globToRegExp(part);
      const last = i === parts.length - 1;
      paths = paths.flatMap((dir) =>
        this.children(dir)
          .filter((n) => re.test(n))
          .map((n) => (dir ? `${dir}/${n}` : n))
          .filter((p) => last || this.node(p)?.type === 'dir'),
      );
    });
    return paths;
  }
}

function fileChecksum(n: FsNode): string {
  if (n.type === 'symlink') return crypto.createHash('sha256').update(`symlink:${n.target}`).digest('hex');
  if (n.type === 'file') return crypto.createHash('sha256').update(n.content).digest('hex');
  return '';
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        re += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
