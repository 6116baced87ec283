/**
 * ListVms' parameter validation (sdc-vmapi lib/common/validation.js `validateListVmsParams`,
 * lib/validation/sort.js, lib/common/marker.js): strict (a parameter without a validator is an
 * error), then every validator in VMAPI's order, then offset and marker are not to be used
 * together. Failures are `409 ValidationFailed "Invalid Parameters"`.
 */
import { elem, validUUID, validationFailed, type ErrorElem } from './errors.js';
import { MAX_LIST_VMS_LIMIT } from './list-vms.js';
import {
  bool,
  csv,
  jsonPredicate,
  num,
  oneOf,
  polymorphic,
  str,
  timestamp,
  uuid,
  validateStrict,
  type P,
  type Validator,
} from './validators.js';
import { ALIAS_RE } from './field-validators.js';
import { VALID_VM_BRANDS, VM_FIELD_NAMES } from './vm-fields.js';

const RAM_RE = /^0$|^([1-9][0-9]*$)/;
const VALID_LIST_STATES = ['running', 'stopped', 'active', 'destroyed'];

/** The keys ListVms can sort on (VALID_SORT_KEYS). */
export const VALID_SORT_KEYS = [
  'uuid', 'owner_uuid', 'image_uuid', 'billing_id', 'server_uuid', 'tags', 'brand', 'state', 'alias',
  'max_physical_memory', 'create_timestamp', 'docker',
];

/** `isValidSortCriteria`. */
export function validSort(s: string): boolean {
  if (s === '') return true;
  const [key, order] = s.split('.');
  return VALID_SORT_KEYS.includes(key!) && (order === undefined || ['ASC', 'DESC'].includes(order.toUpperCase()));
}

/** `parseMarkerJSONString` + `validateMarker`: the marker object, or the reasons it is refused. */
function parseMarker(text: string, sort: unknown): { marker?: P; errors: string[] } {
  let marker: unknown = null;
  const errs: string[] = [];
  try {
    marker = JSON.parse(text);
  } catch (e) {
    errs.push(`Could not parse marker as an object JSON representation, reason: ${(e as Error).message}`);
  }
  if (marker !== null && Object.prototype.toString.call(marker) !== '[object Object]') {
    errs.push('Marker must represent an object.');
    marker = null;
  }
  if (marker === null) return { errors: errs };
  const m = marker as P;
  if (m.create_timestamp !== undefined) {
    const n = Number(m.create_timestamp);
    const t = (Number.isNaN(n) ? new Date(String(m.create_timestamp)) : new Date(n)).getTime();
    if (Number.isNaN(t)) return { errors: [`Marker has an invalid create_timestamp field: ${String(m.create_timestamp)}`] };
    m.create_timestamp = t;
  }
  const sortStr = typeof sort === 'string' ? sort : undefined;
  if (!Object.keys(m).includes('uuid')) {
    errs.push('A marker needs to have a uuid property from which a strict total order can be established');
  }
  if (sortStr !== undefined && !Object.keys(m).includes(sortStr.split('.')[0]!)) {
    errs.push(`All sort fields must be present in marker. Sort fields: ${sortStr}.`);
  }
  const sortField = (sortStr ?? '').split('.')[0];
  const allInSort = validSort(sortStr ?? '') && Object.keys(m).every((k) => k === 'uuid' || k === sortField);
  if (!allInSort) errs.push(`All marker keys except uuid must be present in the sort parameter. Sort fields: ${String(sortStr)}.`);
  return errs.length ? { errors: errs } : { marker: m, errors: [] };
}

const LIST_VALIDATORS: Record<string, Validator> = {
  alias: str('alias', { re: ALIAS_RE }),
  billing_id: uuid('billing_id'),
  brand: oneOf('brand', VALID_VM_BRANDS),
  create_timestamp: timestamp('create_timestamp'),
  docker: bool('docker'),
  fields: csv('fields', (f) => VM_FIELD_NAMES.has(f) || f === '*' || f === 'role_tags'),
  image_uuid: uuid('image_uuid'),
  internal_metadata: polymorphic('internal_metadata'),
  limit: num('limit', { min: 1, max: MAX_LIST_VMS_LIMIT }),
  marker: (p) => {
    if (p.marker === undefined) return [];
    const text = String(p.marker);
    const { marker, errors } = parseMarker(text, p.sort);
    if (!marker) return errors.map((e) => elem.invalid('marker', `Invalid marker: ${text}. ${e}`));
    p.marker = marker;
    return [];
  },
  offset: num('offset'),
  owner_uuid: uuid('owner_uuid'),
  package_name: str('package_name'),
  package_version: str('package_version'),
  predicate: jsonPredicate('predicate'),
  query: str('query'),
  ram: str('ram', { re: RAM_RE }),
  server_uuid: uuid('server_uuid'),
  sort: (p) => (p.sort !== undefined && !validSort(String(p.sort)) ? [elem.invalid('sort', `Invalid sort param: ${String(p.sort)}`)] : []),
  state: oneOf('state', VALID_LIST_STATES),
  tag: polymorphic('tag'),
  uuid: uuid('uuid'),
  uuids: csv('uuids', validUUID),
};

/** Validate (and type) ListVms' parameters in place; throws VMAPI's 409. */
export function validateListParams(p: P): void {
  const errs: ErrorElem[] = validateStrict(LIST_VALIDATORS, p);
  if (errs.length) throw validationFailed('Invalid Parameters', errs);
  if (p.offset && p.marker) {
    throw validationFailed('Invalid Parameters', [
      elem.conflicting(['offset', 'marker'], 'offset and marker cannot be used at the same time'),
    ]);
  }
  if (typeof p.uuids === 'string') p.uuids = p.uuids.split(',');
}
