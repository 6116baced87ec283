/**
 * VMAPI's error bodies (sdc-vmapi lib/errors.js): `409 ValidationFailed` with an `errors`
 * array whose elements are built as VMAPI builds them (a MissingParameter element has no
 * message unless one is given; a conflict names its `fields`), VMAPI's own 409s
 * (UnallocatedVM, BrandNotSupported, VmNotRunning, VmNotStopped, ...), and restify 4's
 * `UnprocessableEntityError` body VMAPI relays for unknown networks.
 */
import { MockcloudError, type ErrorCode } from '../../common/errors.js';

/** One element of a VMAPI `errors` array. */
export type ErrorElem = Record<string, unknown> & { code: string };

/** VMAPI's UUID check (`validUUID`): lower-case hex only. */
const UUID_RE = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;

export function validUUID(v: unknown): v is string {
  return typeof v === 'string' && UUID_RE.test(v);
}

/** An error whose body is exactly VMAPI's: `{code, message[, errors]}` plus any extra keys. */
export class VmapiError extends MockcloudError {
  readonly elems: ErrorElem[] | undefined;
  /** Extra top-level body keys, or `plain`: the body is `{message}` alone. */
  private readonly shape: { extra?: Record<string, unknown>; plain?: boolean };

  constructor(
    code: ErrorCode,
    message: string,
    opts: { restCode?: string; elems?: ErrorElem[]; cause?: unknown; extra?: Record<string, unknown>; plain?: boolean } = {},
  ) {
    super(code, message, {
      ...(opts.restCode ? { restCode: opts.restCode } : {}),
      ...(opts.cause !== undefined ? { cause: opts.cause } : {}),
    });
    this.elems = opts.elems;
    this.shape = { ...(opts.extra ? { extra: opts.extra } : {}), ...(opts.plain ? { plain: true } : {}) };
  }

  override toBody(): { code: string; message: string } {
    if (this.shape.plain) return { message: this.message } as { code: string; message: string };
    const body: Record<string, unknown> = { code: this.restCode, message: this.message };
    if (this.elems) body.errors = this.elems;
    if (this.shape.extra) Object.assign(body, this.shape.extra);
    return body as { code: string; message: string };
  }
}

/**
 * An error that is not a restify one (a VError, a Moray error), as VMAPI's JSON formatter
 * sends it: status 500 and `{message}` alone.
 */
export function plainError(message: string, cause?: unknown): VmapiError {
  return new VmapiError('InternalError', message, { plain: true, ...(cause !== undefined ? { cause } : {}) });
}

export const elem = {
  /** `invalidUuidErrorsElem`. */
  uuid: (field = 'uuid', message = 'Invalid UUID'): ErrorElem => ({ field, code: 'Invalid', message }),
  /** `invalidParamErrorsElem`. */
  invalid: (field: string, message = 'Invalid parameter'): ErrorElem => ({ field, code: 'Invalid', message }),
  /** `missingParamErrorsElem`: no message unless one is given. */
  missing: (field: string, message?: string): ErrorElem =>
    message === undefined ? { field, code: 'MissingParameter' } : { field, code: 'MissingParameter', message },
  /** `duplicateParamErrorsElem`. */
  duplicate: (field: string, message = 'Already exists'): ErrorElem => ({ field, code: 'Duplicate', message }),
  /** `insufficientCapacityErrorsElem`. */
  capacity: (field: string, message = 'Invalid Capacity'): ErrorElem => ({ field, code: 'InsufficientCapacity', message }),
  /** `conflictingParamsErrorsElem`. */
  conflicting: (fields: string[], message?: string): ErrorElem =>
    message === undefined ? { fields, code: 'ConflictingParameters' } : { fields, code: 'ConflictingParameters', message },
};

/** `ValidationFailedError`: 409 with the elements. */
export function validationFailed(message: string, elems: ErrorElem[]): VmapiError {
  return new VmapiError('ValidationFailed', message, { elems });
}

/** VMAPI's own 409 errors, each with its restCode. */
export const vmapiErrors = {
  unallocated: (message: string) => new VmapiError('Conflict', message, { restCode: 'UnallocatedVM' }),
  brandNotSupported: (message: string) => new VmapiError('Conflict', message, { restCode: 'BrandNotSupported' }),
  notRunning: () => new VmapiError('Conflict', 'VM not running', { restCode: 'VmNotRunning' }),
  notStopped: (desc?: string) =>
    new VmapiError('Conflict', desc ? `VM not stopped: ${desc}` : 'VM not stopped', { restCode: 'VmNotStopped' }),
  noFlexibleDisk: () =>
    new VmapiError('Conflict', 'VM does not have flexible disk sizing enabled', { restCode: 'VmWithoutFlexibleDiskSize' }),
  insufficientDisk: () =>
    new VmapiError('Conflict', 'VM does not have sufficient free disk', { restCode: 'InsufficientDiskSpace' }),
  /** restify's ResourceNotFoundError. */
  notFound: (message: string) => new VmapiError('ResourceNotFound', message),
  /** restify's ConflictError. */
  conflict: (message: string) => new VmapiError('Conflict', message),
  /** restify 4's UnprocessableEntityError (its restCode keeps the `Error` suffix). */
  unprocessable: (message: string) => new VmapiError('InvalidParameters', message, { restCode: 'UnprocessableEntityError' }),
  /** restify's MissingParameterError. */
  missingParameter: (message: string) => new VmapiError('MissingParameter', message),
};
