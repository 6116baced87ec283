/**
 * ZFS's rules for dataset names and the words it refuses them with (illumos libzfs
 * zfs_validate_name over zfs_namecheck's entity check), and the shape of a failed `zfs`
 * command as the real tasks report it: node-zfs runs /sbin/zfs with execFile, whose error
 * message is `Command failed: <command line>\n<stderr>`.
 */

/** What a name may be: a filesystem or volume, a snapshot, or either. */
export type NameTypes = 'dataset' | 'snapshot' | 'any';

const MAX_NAME_LEN = 256;

function validChar(c: string): boolean {
  return /^[A-Za-z0-9\-_.: ]$/.test(c);
}

/** zfs_namecheck: why `name` is not a well-formed dataset, snapshot or bookmark name. */
function namecheck(name: string): string | undefined {
  if (name.length >= MAX_NAME_LEN) return 'name is too long';
  if (name.startsWith('/')) return 'leading slash in name';
  if (name === '') return 'empty component in name';
  let start = 0;
  let foundDelim = false;
  for (;;) {
    let end = start;
    while (end < name.length && !'/@#'.includes(name[end]!)) end++;
    if (end === name.length && name[end - 1] === '/') return 'trailing slash in name';
    for (let i = start; i < end; i++) {
      const c = name[i]!;
      if (!validChar(c) && c !== '%') return `invalid character '${c}' in name`;
    }
    const delim = end < name.length ? name[end] : '';
    if (delim === '' || delim === '/') {
      const component = name.slice(start, end);
      if (component === '.') return "self reference, '.' is found in name";
      if (component === '..') return "parent reference, '..' is found in name";
    }
    if (delim === '@' || delim === '#') {
      if (foundDelim) return "multiple '@' and/or '#' delimiters in name";
      foundDelim = true;
    }
    if (start === end) return 'empty component in name';
    if (end === name.length) return undefined;
    if (delim === '/' && foundDelim) return 'trailing slash in name';
    start = end + 1;
  }
}

/**
 * Why ZFS refuses `name` for an operation on `types`, or undefined when it is acceptable.
 * `modifying` is set for names about to be created (a `%` is refused there).
 */
export function nameProblem(name: string, types: NameTypes, modifying = false): string | undefined {
  const why = namecheck(name);
  if (why) return why;
  if (types === 'dataset' && name.includes('@')) return "snapshot delimiter '@' is not expected here";
  if (types === 'snapshot' && !name.includes('@')) return "missing '@' delimiter in snapshot name";
  if (name.includes('#')) return "bookmark delimiter '#' is not expected here";
  if (modifying && name.includes('%')) return 'invalid character % in name';
  return undefined;
}

/** The part of a dataset name before the `@`, and the snapshot name after it. */
export function splitSnapshot(name: string): { fs: string; snap?: string } {
  const at = name.indexOf('@');
  return at < 0 ? { fs: name } : { fs: name.slice(0, at), snap: name.slice(at + 1) };
}

/** The parent of a filesystem or volume (undefined for a pool), or a snapshot's dataset. */
export function parentOf(name: string): string | undefined {
  const at = name.indexOf('@');
  if (at >= 0) return name.slice(0, at);
  const slash = name.lastIndexOf('/');
  return slash < 0 ? undefined : name.slice(0, slash);
}

export function poolOf(name: string): string {
  const cut = name.search(/[/@#]/);
  return cut < 0 ? name : name.slice(0, cut);
}

/** `d` is `ancestor` or below it (a child dataset or a snapshot of either). */
export function isAtOrBelow(d: string, ancestor: string): boolean {
  return d === ancestor || d.startsWith(`${ancestor}/`) || d.startsWith(`${ancestor}@`);
}

/** A failed `/sbin/zfs` run: the arguments it had and what it wrote to stderr. */
export class ZfsCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly stderr: string,
  ) {
    super(stderr);
    this.name = 'ZfsCommandError';
  }

  /** Node's execFile error message for it, which node-zfs passes on. */
  get execMessage(): string {
    return `Command failed: /sbin/zfs ${this.args.join(' ')}\n${this.stderr}`;
  }
}

/**
 * zfs(1M)'s usage text for a command it could not parse, as it prints it to stderr (then
 * exits 2): the command's synopsis and the two pointers every non-property command ends with.
 */
const SYNOPSIS: Record<string, string> = {
  snapshot: '\tsnapshot [-r] [-o property=value] ... <filesystem|volume>@<snap> ...\n',
};

export function usageText(command: keyof typeof SYNOPSIS): string {
  return (
    `usage:\n${SYNOPSIS[command]}` +
    '\nFor the property list, run: zfs set|get\n' +
    '\nFor the delegated permission list, run: zfs allow|unallow\n'
  );
}
