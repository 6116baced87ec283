/**
 * NAPI's error bodies (sdc-napi lib/util/errors.js): parameter problems are one
 * `422 InvalidParameters` with an `errors` array of `{field, code, message}` entries sorted
 * by field; a full network is `507 SubnetFull` carrying the `network_uuid`. The builders
 * below produce the same entries and messages, so clients that look at `errors[0].code`
 * (e.g. CNAPI ignoring `Duplicate` on nic tag creation) behave as against a real NAPI.
 */
import { MockcloudError, type ErrorCode } from '../../common/errors.js';

/** One entry of a NAPI `errors` array; some carry extra keys (`invalid`, `id`, `type`). */
export interface NapiFieldError {
  field: string | string[];
  code: string;
  message: string;
  [extra: string]: unknown;
}

export const MSG = {
  duplicate: 'Already exists',
  missingParam: 'Missing parameter',
  invalidParams: 'Invalid parameters',
  missingParams: 'Missing parameters',
  invalidUuid: 'invalid UUID',
  str: 'must be a string',
  strEmpty: 'must not be empty',
  arrayOfStr: 'must be an array of strings',
  arrayEmpty: 'must not be an empty array',
  unknownParams: 'Unknown parameters',
  parametersAreObjects: 'Parameters must be objects',
  limit: 'invalid limit, must be an integer greater than 0 or less than or equal to 1000',
  offset: 'invalid value, offset must be an integer greater than or equal to 0',
  invalidIp: 'invalid IP address',
  ipv4Required: 'Specified address must be IPv4',
  subnetFull: 'no more free IPs',
  ownerMatch: 'network owner_uuids do not match',
  ipNoVlanTag: 'required if IP specified but not network_uuid',
  nicTagSlash: 'only one slash is allowed after the tag name',
  vlan: 'VLAN ID must be a number between 0 and 4094, and not 1',
  mtuNicTag: 'mtu must be a number between 1500 and 9000',
  adminMtu: 'admin nic tag mtu must be 1500',
} as const;

/** An HTTP error whose body is exactly NAPI's (extra top-level keys included). */
export class NapiError extends MockcloudError {
  readonly fieldErrors: NapiFieldError[] | undefined;
  readonly extraBody: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { restCode?: string; fieldErrors?: NapiFieldError[]; extraBody?: Record<string, unknown> } = {},
  ) {
    super(code, message, opts.restCode ? { restCode: opts.restCode } : {});
    this.fieldErrors = opts.fieldErrors;
    this.extraBody = opts.extraBody;
  }

  override toBody(): { code: string; message: string; errors?: never } {
    const body: Record<string, unknown> = { code: this.restCode, message: this.message };
    if (this.fieldErrors) body.errors = this.fieldErrors;
    if (this.extraBody) Object.assign(body, this.extraBody);
    return body as { code: string; message: string };
  }
}

export function invalidParam(field: string, message: string = MSG.invalidParams, extra?: Record<string, unknown>): NapiFieldError {
  return { field, code: 'InvalidParameter', message, ...extra };
}

export function missingParam(field: string, message: string = MSG.missingParam): NapiFieldError {
  return { field, code: 'MissingParameter', message };
}

export function duplicateParam(field: string, message: string = MSG.duplicate): NapiFieldError {
  return { field, code: 'Duplicate', message };
}

export function unknownParams(fields: string[]): NapiFieldError {
  return { field: fields, code: 'UnknownParameters', message: `${MSG.unknownParams}: ${fields.join(', ')}` };
}

export function usedByParam(field: string, type: string, id: string, message?: string): NapiFieldError {
  return { type, id, code: 'UsedBy', message: message ?? `In use by ${type} "${id}"`, field };
}

/** `InvalidParamsError`: 422 with the field errors sorted by field. */
export function invalidParamsError(errs: NapiFieldError[], message?: string): NapiError {
  // restify-warden sorts with `a.field > b.field ? 1 : -1`; on the V8 NAPI runs, that keeps
  // equal fields in their order (insertion sort), which a stable sort does here.
  const sorted = [...errs].sort((a, b) => (String(a.field) > String(b.field) ? 1 : String(a.field) < String(b.field) ? -1 : 0));
  const onlyMissing = sorted.every((e) => e.code === 'MissingParameter');
  return new NapiError('InvalidParameters', message ?? (onlyMissing ? MSG.missingParams : MSG.invalidParams), {
    fieldErrors: sorted,
  });
}

export function subnetFullError(networkUuid: string): NapiError {
  return new NapiError('InsufficientStorage', MSG.subnetFull, {
    restCode: 'SubnetFull',
    extraBody: { network_uuid: networkUuid },
  });
}

/** `InUseError`: 422 InUse, e.g. deleting a nic tag a network still uses. */
export function inUseError(message: string, errs: NapiFieldError[]): NapiError {
  return new NapiError('InvalidParameters', message, { restCode: 'InUse', fieldErrors: errs });
}

export function notFound(message: string): MockcloudError {
  return new MockcloudError('ResourceNotFound', message);
}
