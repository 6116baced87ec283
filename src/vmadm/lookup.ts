/**
 * `vmadm lookup` filters, compiled once per call and run over the in-memory index.
 *
 * - `field: value` matches when the field's value, as a string, equals the value's string
 *   (vmadm compares `toString()`s, so `ram: 1024` and `ram: "1024"` both match).
 * - Nested fields: `tags.role`, `customer_metadata.foo` (the rest of the key after the
 *   first dot is the map key, dots and all); `nics.*.ip`, `disks.0.size` (`*` = any
 *   element); `resolvers.0`.
 * - A value starting with `~` is a case-insensitive regular expression (vmadm's rule).
 * - Our extension for numbers: a value `<N`, `<=N`, `>N`, `>=N` compares numerically
 *   (only when the field's value is a number; other values never match it).
 * - MACs in `nics.*.mac` are compared normalised ("0:1:..." == "00:01:...").
 */
import { invalidValue } from './errors.js';
import { normalizeMac } from './nics.js';
import type { LoadOptions, LookupSearch, Vm } from './types.js';

type Test = (v: unknown) => boolean;
type Matcher = (vm: Vm) => boolean;

const MAP_FIELDS = ['tags', 'customer_metadata', 'internal_metadata', 'routes'];
const CMP_RE = /^(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)$/;

function valueTest(key: string, target: unknown): Test {
  if (typeof target === 'string' && target.startsWith('~')) {
    let re: RegExp;
    try {
      re = new RegExp(target.slice(1), 'i');
    } catch (err) {
      throw invalidValue(key, `invalid regular expression: ${(err as Error).message}`);
    }
    return (v) => v !== undefined && v !== null && re.test(String(v));
  }
  if (typeof target === 'string') {
    const cmp = CMP_RE.exec(target);
    if (cmp) {
      const n = Number(cmp[2]);
      const op = cmp[1];
      return (v) => {
        if (typeof v !== 'number') return String(v) === target;
        return op === '<' ? v < n : op === '<=' ? v <= n : op === '>' ? v > n : v >= n;
      };
    }
  }
  if (target === null || (typeof target !== 'string' && typeof target !== 'number' && typeof target !== 'boolean')) {
    throw invalidValue(key, 'lookup values must be strings, numbers or booleans');
  }
  const want = String(target);
  return (v) => v !== undefined && v !== null && String(v) === want;
}

/** The values `path` selects in `vm` (several with `*`). */
function resolve(vm: unknown, parts: readonly string[]): unknown[] {
  let current: unknown[] = [vm];
  for (const part of parts) {
    const next: unknown[] = [];
    for (const c of current) {
      if (c === null || typeof c !== 'object') continue;
      if (Array.isArray(c)) {
        if (part === '*') next.push(...c);
        else if (/^\d+$/.test(part) && Number(part) < c.length) next.push(c[Number(part)]);
      } else if (Object.hasOwn(c, part)) {
        next.push((c as Record<string, unknown>)[part]);
      }
    }
    current = next;
  }
  return current;
}

function splitKey(key: string): string[] {
  const dot = key.indexOf('.');
  if (dot > 0 && MAP_FIELDS.includes(key.slice(0, dot))) return [key.slice(0, dot), key.slice(dot + 1)];
  return key.split('.');
}

export function compileSearch(search: LookupSearch | undefined): Matcher {
  const tests: Matcher[] = [];
  for (const [key, raw] of Object.entries(search ?? {})) {
    if (raw === undefined) continue;
    if (key === '') throw invalidValue(key, 'empty lookup key');
    const parts = splitKey(key);
    const isMac = /^nics\.[^.]+\.mac$/.test(key);
    const target = isMac && typeof raw === 'string' && !raw.startsWith('~') ? normalizeMac(raw) : raw;
    const test = valueTest(key, target);
    tests.push((vm) => resolve(vm, parts).some((v) => test(isMac && typeof v === 'string' ? normalizeMac(v) : v)));
  }
  return (vm) => tests.every((t) => t(vm));
}

/** A copy of `vm` with only `fields` (all fields when absent), safe for the caller to change. */
export function project(vm: Vm, opts: LoadOptions | undefined): Vm {
  if (!opts?.fields) return structuredClone(vm) as Vm;
  const out: Record<string, unknown> = {};
  for (const f of opts.fields) {
    if (Object.hasOwn(vm, f)) out[f] = structuredClone(vm[f]);
  }
  return out as Vm;
}

export function visible(vm: Vm, opts: LoadOptions | undefined): boolean {
  return opts?.include_dni === true || vm.do_not_inventory !== true;
}
