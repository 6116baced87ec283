/**
 * The process's limit on open descriptors (the soft RLIMIT_NOFILE, `ulimit -n`), as Linux's
 * /proc/self/limits gives it; undefined where that cannot be read (the caps then keep their
 * fixed defaults).
 */
import { readFileSync } from 'node:fs';

export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return undefined;
    return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  } catch {
    return undefined;
  }
}
