/**
 * VMAPI's field validators (sdc-vmapi lib/common/validation.js `createValidate*Fn`): each takes
 * the request parameters, returns VMAPI's error elements, and converts what it accepts in
 * place as VMAPI does (numbers with `Number()`, `'true'`/`'false'` to booleans, timestamps to
 * ms), with VMAPI's messages and its quirks (a number is checked with `parseInt` but stored
 * with `Number`; a missing-parameter element has no message).
 */
import { elem, validUUID, type ErrorElem } from './errors.js';
import { validatePredicate } from './predicate.js';

export type P = Record<string, unknown>;
export type Validator = (p: P) => ErrorElem[];

/** `validNumber`: undefined when valid, else the reason. */
export function numberProblem(v: unknown, opts: { min?: number; max?: number } = {}): string | undefined {
  const min = opts.min ?? 0;
  const n = Number.parseInt(String(v), 10);
  let ok = n >= min;
  if (ok && opts.max !== undefined) ok = n <= opts.max;
  if (ok) return undefined;
  return `number must be ${[`>= ${min}`, ...(opts.max !== undefined ? [`<= ${opts.max}`] : [])].join(' and ')}`;
}

export function str(field: string, opts: { re?: RegExp; max?: number; required?: boolean } = {}): Validator {
  return (p) => {
    const errs: ErrorElem[] = [];
    const v = p[field];
    if (opts.required && v === undefined) errs.push(elem.missing(field));
    if (v === undefined) return errs;
    if (typeof v !== 'string') errs.push(elem.invalid(field, 'Not a valid string'));
    const len = (v as { length?: unknown }).length;
    if (opts.max !== undefined && typeof len === 'number' && len > opts.max) {
      errs.push(elem.invalid(field, `String is longer than maximum of ${opts.max} characters`));
    }
    if (opts.re && !opts.re.test(String(v))) errs.push(elem.invalid(field, `String does not match regexp: ${opts.re}`));
    return errs;
  };
}

export function num(field: string, opts: { min?: number; max?: number; required?: boolean } = {}): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return opts.required ? [elem.missing(field)] : [];
    const problem = numberProblem(v, opts);
    if (problem) return [elem.invalid(field, `Not a valid number: ${problem}`)];
    p[field] = Number(v);
    return [];
  };
}

export function bool(field: string): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined || typeof v === 'boolean') return [];
    if (v !== 'true' && v !== 'false') return [elem.invalid(field)];
    p[field] = v === 'true';
    return [];
  };
}

export function uuid(field: string, required = false): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return required ? [elem.missing(field)] : [];
    return validUUID(v) ? [] : [elem.uuid(field)];
  };
}

export function oneOf(field: string, list: string[], required = false): Validator {
  const sorted = [...list].sort();
  return (p) => {
    const v = p[field];
    const errs: ErrorElem[] = [];
    if (required && v === undefined) errs.push(elem.missing(field));
    if (v !== undefined && !list.includes(v as string)) errs.push(elem.invalid(field, `Must be one of: ${sorted.join(', ')}`));
    return errs;
  };
}

export function arrayOf(field: string): Validator {
  return (p) => (p[field] !== undefined && !Array.isArray(p[field]) ? [elem.invalid(field, 'Not an array')] : []);
}

/** `validTimestamp` + `jsprim.parseDateTime`: an ISO date or ms since the epoch. */
export function timestamp(field: string): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return [];
    const valid = !Number.isNaN(new Date(v as string).getTime()) || !Number.isNaN(new Date(Number(v)).getTime());
    if (!valid) return [elem.invalid(field, `Invalid timestamp: ${String(v)}`)];
    const n = Number(v);
    p[field] = (Number.isNaN(n) ? new Date(String(v)) : new Date(n)).getTime();
    return [];
  };
}

/** A comma-separated list whose every value passes `ok`. */
export function csv(field: string, ok: (s: string) => boolean): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return [];
    return String(v).split(',').every(ok) ? [] : [elem.invalid(field, `Invalid values: ${String(v)}`)];
  };
}

/** `createValidateJSONPredicateFn`. */
export function jsonPredicate(field: string): Validator {
  return (p) => {
    const v = p[field];
    if (!v) return [];
    let pred: unknown;
    try {
      pred = JSON.parse(String(v));
    } catch {
      return [elem.invalid('predicate', 'Unable to parse predicate as JSON')];
    }
    const errs: ErrorElem[] = [];
    if (pred !== null && typeof pred === 'object' && Object.keys(pred).length === 0) {
      errs.push(elem.invalid('predicate', 'Empty predicate'));
    }
    try {
      validatePredicate(pred);
    } catch (e) {
      errs.push(elem.invalid('predicate', `Predicate syntax error: ${String(e)}`));
    }
    return errs;
  };
}

/** `tag.<key>=<value>` style parameters: key and value must be non-empty strings. */
export function polymorphic(name: string): Validator {
  return (p) => {
    const errs: ErrorElem[] = [];
    for (const [full, value] of Object.entries(p)) {
      const dot = full.indexOf('.');
      if ((dot === -1 ? full : full.slice(0, dot)) !== name) continue;
      const key = dot === -1 ? undefined : full.slice(dot + 1);
      if (typeof key !== 'string' || key.length === 0) {
        errs.push(elem.invalid(name, `Invalid ${name} key: ${JSON.stringify(key)}`));
      } else if (typeof value !== 'string' || value.length === 0) {
        errs.push(elem.invalid(name, `Invalid ${name} value: ${JSON.stringify(value)}`));
      }
    }
    return errs;
  };
}

/**
 * `validateParams` with `strict`: every parameter must have a validator (by its name before
 * the first dot), then every validator runs in order.
 */
export function validateStrict(validators: Record<string, Validator>, p: P): ErrorElem[] {
  const errs: ErrorElem[] = [];
  for (const name of Object.keys(p)) {
    if (!validators[name.split('.')[0]!]) errs.push(elem.invalid(name));
  }
  for (const v of Object.values(validators)) errs.push(...v(p));
  return errs;
}
