/**
 * NAPI's parameter validation engine (restify-warden `validate.params` as NAPI uses it):
 * a schema of required and optional per-field validators, an optional `strict` check for
 * unknown parameters, and `after` checks that see the parsed result. Every problem is
 * collected, then reported together as one 422 InvalidParameters whose `errors` are sorted
 * by field ("Missing parameters" when only required fields are absent).
 *
 * A validator returns the parsed value, or `{ multi }` to set several parsed keys (NAPI's
 * third callback argument), or throws a FieldProblem.
 */
import { invalidParam, invalidParamsError, MSG, unknownParams, type NapiFieldError, missingParam } from './errors.js';
import { isUuid } from '../../common/uuid.js';

/** A validator's complaint about its field (or, from `after` checks, several). */
export class FieldProblem {
  constructor(readonly errors: NapiFieldError[]) {}
}

export function problem(err: NapiFieldError | NapiFieldError[]): FieldProblem {
  return new FieldProblem(Array.isArray(err) ? err : [err]);
}

export interface Multi {
  multi: Record<string, unknown>;
}

export type Validator<C> = (ctx: C, name: string, value: unknown) => unknown;
export type AfterCheck<C> = (ctx: C, raw: Record<string, unknown>, parsed: Record<string, unknown>) => void;

export interface Schema<C> {
  strict?: boolean;
  required?: Record<string, Validator<C>>;
  optional?: Record<string, Validator<C>>;
  after?: AfterCheck<C>[];
}

export function isMulti(v: unknown): v is Multi {
  return typeof v === 'object' && v !== null && Object.prototype.hasOwnProperty.call(v, 'multi') && Object.keys(v).length === 1;
}

function has(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function collect(errs: NapiFieldError[], err: unknown): void {
  if (err instanceof FieldProblem) errs.push(...err.errors);
  else throw err;
}

export function validateParams<C>(schema: Schema<C>, ctx: C, params: unknown): Record<string, unknown> {
  const errs: NapiFieldError[] = [];
  const parsed: Record<string, unknown> = {};
  if (!params || typeof params !== 'object' || Array.isArray(params)) {
    throw invalidParamsError([invalidParam('parameters', MSG.parametersAreObjects)]);
  }
  const raw = params as Record<string, unknown>;
  const run = (field: string, fn: Validator<C>): void => {
    try {
      const v = fn(ctx, field, raw[field]);
      if (isMulti(v)) Object.assign(parsed, v.multi);
      else if (v !== undefined) parsed[field] = v;
    } catch (err) {
      collect(errs, err);
    }
  };
  for (const [field, fn] of Object.entries(schema.required ?? {})) {
    if (has(raw, field)) run(field, fn);
    else errs.push(missingParam(field));
  }
  for (const [field, fn] of Object.entries(schema.optional ?? {})) {
    if (has(raw, field)) run(field, fn);
  }
  if (schema.strict) {
    const unknown = Object.keys(raw).filter((k) => !has(schema.required ?? {}, k) && !has(schema.optional ?? {}, k));
    if (unknown.length > 0) errs.push(unknownParams(unknown));
  }
  if (errs.length === 0) {
    // restify-warden's crossValidate: a pipeline that stops at the first check that fails.
    for (const check of schema.after ?? []) {
      try {
        check(ctx, raw, parsed);
      } catch (err) {
        collect(errs, err);
        break;
      }
    }
  }
  if (errs.length > 0) throw invalidParamsError(errs);
  return parsed;
}

// --- Stock validators (restify-warden and sdc-napi lib/util/validate.js)

const WHITESPACE_RE = /\s/g;
const MAX_STR_LEN = 64;

export function uuid(_: unknown, name: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/.test(v)) {
    throw problem(invalidParam(name, MSG.invalidUuid));
  }
  return v;
}

export function string(_: unknown, name: string, v: unknown): string {
  if (typeof v !== 'string') throw problem(invalidParam(name, MSG.str));
  if (v.length > MAX_STR_LEN) throw problem(invalidParam(name, `must not be longer than ${MAX_STR_LEN} characters`));
  if (v.replace(WHITESPACE_RE, '') === '') throw problem(invalidParam(name, MSG.strEmpty));
  return v;
}

export function stringArray(_: unknown, name: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw problem(invalidParam(name, MSG.arrayOfStr));
  if (v.length === 0) throw problem(invalidParam(name, MSG.arrayEmpty));
  for (const s of v) {
    if (typeof s !== 'string') throw problem(invalidParam(name, MSG.arrayOfStr));
    if (s.replace(WHITESPACE_RE, '') === '') throw problem(invalidParam(name, MSG.strEmpty));
  }
  return v as string[];
}

export function stringOrArray(ctx: unknown, name: string, v: unknown): string | string[] {
  try {
    return string(ctx, name, v);
  } catch {
    return stringArray(ctx, name, v);
  }
}

/** A scalar, an array, or a comma-separated string, as an array (NAPI's `arrayify`). */
export function arrayify(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (v === '') return [];
  if (typeof v === 'string') return v.split(',');
  return [v];
}

export function uuidArray(_: unknown, name: string, v: unknown): string[] {
  if (!Array.isArray(v) && typeof v !== 'string') throw problem(invalidParam(name, MSG.arrayOfStr));
  const valid = new Set<string>();
  const invalid = new Set<string>();
  for (const u of arrayify(v)) {
    if (typeof u === 'string' && isUuid(u) && u === u.toLowerCase()) valid.add(u);
    else invalid.add(String(u));
  }
  if (invalid.size > 0) throw problem(invalidParam(name, MSG.invalidUuid, { invalid: [...invalid].sort() }));
  return [...valid].sort();
}

export function bool(_: unknown, name: string, v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  throw problem(invalidParam(name, 'must be a boolean value'));
}

function notInteger(v: string, n: number): boolean {
  return v === '' || v.trim() !== v || Number.isNaN(n) || Math.floor(n) !== n;
}

export function limit(_: unknown, name: string, v: unknown): number {
  const n = Number(v);
  if (typeof v !== 'number' && (typeof v !== 'string' || notInteger(v, n))) throw problem(invalidParam(name, MSG.limit));
  if (Number.isNaN(n) || n < 1 || n > 1000) throw problem(invalidParam(name, MSG.limit));
  return n;
}

export function offset(_: unknown, name: string, v: unknown): number {
  const n = Number(v);
  if (typeof v !== 'number' && (typeof v !== 'string' || notInteger(v, n))) throw problem(invalidParam(name, MSG.offset));
  if (Number.isNaN(n) || n < 0) throw problem(invalidParam(name, MSG.offset));
  return n;
}

export function enumOf(values: readonly string[]): Validator<unknown> {
  return (_ctx, name, v) => {
    if (typeof v !== 'string' || !values.includes(v)) {
      throw problem(invalidParam(name, `must be one of: ${values.map((x) => JSON.stringify(x)).join(', ')}`));
    }
    return v;
  };
}

export function vlan(_: unknown, name: string, v: unknown): number {
  const n = Number(v);
  if (v === null || v === '' || typeof v === 'boolean' || Number.isNaN(n) || n < 0 || n > 4094) {
    throw problem(invalidParam(name, MSG.vlan));
  }
  return n;
}

/** NAPI's nic tag / interface name rule. */
export function nicTagName(ctx: unknown, name: string, v: unknown): string {
  const s = string(ctx, name, v);
  if (s.length > 31) throw problem(invalidParam(name, 'must not be longer than 31 characters'));
  if (!/^[a-zA-Z0-9_]*$/.test(s)) throw problem(invalidParam(name, 'must only contain numbers, letters and underscores'));
  return s;
}

export function nicTagMtu(_: unknown, name: string, v: unknown): number {
  if (typeof v !== 'number' || v < 1500 || v > 9000) throw problem(invalidParam(name, MSG.mtuNicTag));
  return v;
}

/** Paging parameters as NAPI's moray listing applies them (default limit 1000). */
export function page<T>(items: T[], parsed: Record<string, unknown>): T[] {
  const off = typeof parsed.offset === 'number' ? parsed.offset : 0;
  const lim = typeof parsed.limit === 'number' ? parsed.limit : 1000;
  return items.slice(off, off + lim);
}
