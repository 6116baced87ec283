/**
 * CNAPI's `ensureParamsValid` (sdc-cnapi lib/validation/endpoints.js), rule for rule:
 * with `strict`, any parameter the rules do not name is refused with
 * `409 InvalidArgument "<p> is not an explicitly defined parameter"`; type failures give an
 * `InvalidParameters` body listing the fields, with the status CNAPI sends it with: 500.
 */
import { MockcloudError, type FieldError } from '../../common/errors.js';
import type { Params } from '../http.js';

export type RuleType =
  | 'string'
  | 'object'
  | 'array'
  | 'number'
  | 'boolean'
  | 'int'
  | 'booleanString'
  | 'numberOrString'
  | 'numberGte0';

export interface Rule {
  optional?: boolean;
  type?: RuleType;
  /** Value (as a string) must match. */
  regex?: RegExp;
  /** No leading or trailing whitespace. */
  trim?: boolean;
  /** After validation, "true"/"false" strings become booleans. */
  toBoolean?: boolean;
}

export type Rules = Record<string, Rule>;

const TYPE_CHECKS: Record<RuleType, (v: unknown) => string | undefined> = {
  string: (v) => (typeof v === 'string' ? undefined : 'value was not a string'),
  object: (v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? undefined
      : `value is not an object. (was: ${Object.prototype.toString.call(v)})`,
  array: (v) => (Array.isArray(v) ? undefined : 'value was not an array'),
  number: (v) => (isNumeric(v) ? undefined : 'value was not a number'),
  boolean: (v) => (v === true || v === false ? undefined : 'value was not true or false'),
  int: (v) => (/^[-+]?\d+$/.test(String(v)) ? undefined : 'value was not an integer'),
  booleanString: (v) => (/^(true|false)$/i.test(String(v)) ? undefined : "value was not 'true' or 'false'"),
  numberOrString: (v) => (isNumeric(v) || typeof v === 'string' ? undefined : 'value was not a number or string'),
  numberGte0: (v) =>
    !isNumeric(v) ? 'value was not a number' : Number(v) < 0 ? 'value was not greater than or equal to zero' : undefined,
};

/** JavaScript's `!isNaN(v)` as CNAPI's validator uses it, minus the surprises of `[]` and `''`. */
function isNumeric(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v === 'string') return v.trim() !== '' && !Number.isNaN(Number(v));
  return false;
}

/**
 * Validate `p` against `rules`. Returns a copy with sanitizers applied; throws a
 * MockcloudError (InvalidArgument for strict violations, InvalidParameters otherwise).
 */
export function ensureParamsValid(p: Params, rules: Rules, opts: { strict?: boolean } = {}): Params {
  if (opts.strict) {
    for (const name of Object.keys(p)) {
      if (!Object.prototype.hasOwnProperty.call(rules, name)) {
        throw new MockcloudError('InvalidArgument', `${name} is not an explicitly defined parameter`);
      }
    }
  }
  const out: Params = { ...p };
  const errs: FieldError[] = [];
  for (const [name, rule] of Object.entries(rules)) {
    // A dotted name is a nested field, as restify-validator's `req.assert` resolves it
    // (VmMigrate's `migrationTask.action`).
    const value = name.includes('.') ? nestedValue(out, name) : out[name];
    // A missing required parameter fails its checks as `undefined` does (CNAPI's validator
    // runs them on it), e.g. "value is not an object. (was: [object Undefined])".
    if (value === undefined && rule.optional) continue;
    const msg =
      (rule.type && TYPE_CHECKS[rule.type](value)) ||
      (rule.regex && !rule.regex.test(String(value)) ? `Invalid value for param '${name}'` : undefined) ||
      (rule.trim && /^\s+|\s+$/.test(String(value)) ? 'value contains leading or trailing whitespace' : undefined);
    if (msg) {
      errs.push({ field: name, code: 'Invalid', message: msg });
      continue;
    }
    if (rule.toBoolean) out[name] = /^true$/i.test(String(value));
  }
  if (errs.length > 0) throw invalidParameters(errs);
  return out;
}

function nestedValue(p: Params, path: string): unknown {
  let v: unknown = p;
  for (const key of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Params)[key] : undefined;
  return v;
}

/**
 * CNAPI's `formatValidationErrors` body, sent with status 500 as CNAPI sends it (consumers and
 * sdc-cnapi's own tests expect that status; the code says what went wrong).
 */
export function invalidParameters(errs: FieldError[]): MockcloudError {
  return new MockcloudError('InternalError', 'Request parameters failed validation', {
    restCode: 'InvalidParameters',
    errors: errs,
  });
}

/** CNAPI's `invalid(param, msg)`: one field's InvalidParameters error. */
export function invalidParam(field: string, message: string): MockcloudError {
  return invalidParameters([{ field, code: 'Invalid', message }]);
}

/** `true`/`"true"` as CNAPI's boolean-ish query parameters accept them. */
export function truthy(v: unknown): boolean {
  return v === true || v === 'true';
}

/** Compare dotted versions numerically (enough for cn-agent's x.y.z); NaN parts count as 0. */
export function versionGte(version: string | undefined, min: string): boolean {
  if (!version) return false;
  const a = version.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const b = min.split('.').map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length, 3); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}
