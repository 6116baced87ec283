/**
 * VMAPI's JSON predicates (sdc-vmapi lib/common/predicate.js): `{eq|ne|lt|le|gt|ge: [field,
 * constant]}` and `{and|or: [pred, pred, ...]}`, checked as VMAPI checks them (same error
 * texts) and printed as the LDAP filter VMAPI gives Moray (`ram` is `max_physical_memory`,
 * `tag.<key>` and `internal_metadata.<key>` become searches on the indexed tag string and
 * search array).
 */

type Pred = Record<string, unknown>;

const REL_OPS: Record<string, string> = { lt: '<', le: '<=', gt: '>', ge: '>=', eq: '=', ne: '=' };
const LOG_OPS: Record<string, string> = { and: '&', or: '|' };

function predKey(pred: Pred): string {
  const keys = Object.keys(pred);
  if (keys.length > 1) throw new Error(`found too many keys: ${keys.length}. expected one`);
  if (keys.length < 1) throw new Error('predicate is missing a key');
  return keys[0]!;
}

/** `predValidateSyntax`: throws an Error with VMAPI's message. */
export function validatePredicate(pred: unknown): void {
  if (!(pred instanceof Object)) throw new Error('predicate must be an object');
  const p = pred as Pred;
  const key = predKey(p);
  if (key in REL_OPS) {
    const arg = p[key];
    if (!arg) throw new Error(`predicate is missing key ${JSON.stringify(key)}`);
    if (!Array.isArray(arg)) throw new Error('predicate key does not point to an array');
    if (arg.length !== 2) {
      throw new Error(`predicate key does not point to an array of two elements: found ${arg.length} elements`);
    }
    const [field, constant] = arg as [unknown, unknown];
    if (typeof field !== 'string') throw new Error(`predicate field is not a string: got ${JSON.stringify(field)}.`);
    if (!['number', 'string', 'boolean'].includes(typeof constant)) {
      throw new Error(`predicate constant is not a constant: got ${JSON.stringify(constant)}.`);
    }
  } else if (key in LOG_OPS) {
    const arg = p[key];
    if (!arg) throw new Error(`logical expr is missing key ${JSON.stringify(key)}`);
    if (!Array.isArray(arg)) throw new Error('logical expr key does not point to an array');
    if (arg.length < 2) {
      throw new Error(`logical expr key "${key}" does not contain enough elements: found ${arg.length}, expected at least two`);
    }
    for (const sub of arg) validatePredicate(sub);
  } else {
    throw new Error(`invalid key: ${key}`);
  }
}

function printTags(field: string, value: unknown): string {
  const tagKey = field.replace(/^tag\./, '').replace(/-/g, '%2D');
  if (typeof value === 'boolean' || value === 'true' || value === 'false') {
    return `|(tags=*-${tagKey}=%b{${String(value)}}-*)(tags=*-${tagKey}=${String(value)}-*)`;
  }
  if (!Number.isNaN(Number(value))) {
    return `|(tags=*-${tagKey}=%n{${String(value)}}-*)(tags=*-${tagKey}=${String(value)}-*)`;
  }
  return `tags=*-${tagKey}=${String(value).replace(/-/g, '%2D')}-*`;
}

function printGen(pred: Pred): string {
  const key = Object.keys(pred)[0]!;
  const arg = pred[key] as unknown[];
  if (key in LOG_OPS) return LOG_OPS[key] + arg.map((x) => `(${printGen(x as Pred)})`).join('');
  const [field, value] = arg as [string, unknown];
  let s: string;
  if (field === 'ram') s = `max_physical_memory${REL_OPS[key]}${String(value)}`;
  else if (/^tag\.(.*)$/.test(field)) s = printTags(field, value);
  else if (/^internal_metadata\.(.*)$/.test(field)) {
    s = `internal_metadata_search_array=${field.replace(/^internal_metadata\./, '')}=${String(value)}`;
  } else s = `${field}${REL_OPS[key]}${String(value)}`;
  return key === 'ne' ? `!(${s})` : s;
}

/** `toLdapQuery`: a validated predicate as an LDAP filter string. */
export function predicateToLdap(pred: unknown): string {
  return `(${printGen(pred as Pred)})`;
}

