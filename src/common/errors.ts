/**
 * The one catalogue of coded errors. Every error that crosses an HTTP boundary is a
 * MockcloudError; its code picks the HTTP status and the restify-style body
 * `{"code": "...", "message": "..."}` that Triton clients parse.
 */

export const ERROR_CATALOGUE = {
  // 4xx: the caller's fault
  BadRequest: 400,
  InvalidContent: 400,
  InvalidHeader: 400,
  /** restify: an Accept-Version no route offers (SAPI's 1.0.0 / 2.0.0). */
  InvalidVersion: 400,
  NotAuthorized: 401,
  Forbidden: 403,
  ResourceNotFound: 404,
  VmNotFound: 404,
  SnapshotNotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  Conflict: 409,
  InvalidArgument: 409,
  InvalidParameters: 422,
  /** An event's target (src/events) that selects no server, or no VM. */
  NoMatchingServers: 422,
  MissingParameter: 409,
  ValidationFailed: 409,
  ServerNotRunning: 409,
  VmAlreadyExists: 409,
  Duplicate: 409,
  PreconditionFailed: 412,
  /** NAPI's fabric routes without overlay networking. */
  PreconditionRequired: 428,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  // 5xx: ours, or a peer's
  InternalError: 500,
  NotImplemented: 501,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504,
  /** NAPI's SubnetFull ("no more free IPs") answers 507. */
  InsufficientStorage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** One field-level complaint, as NAPI and VMAPI put them in `errors`. */
export interface FieldError {
  field: string;
  code: string;
  message: string;
}

export interface RestErrorBody {
  code: string;
  message: string;
  errors?: FieldError[];
}

export class MockcloudError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  /** vmadm-style restCode (e.g. "VmNotFound"); defaults to the code. */
  readonly restCode: string;
  readonly errors?: FieldError[];

  constructor(
    code: ErrorCode,
    message: string,
    opts: { restCode?: string; errors?: FieldError[]; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = `${code}Error`;
    this.code = code;
    this.statusCode = ERROR_CATALOGUE[code];
    this.restCode = opts.restCode ?? code;
    if (opts.errors) this.errors = opts.errors;
  }

  toBody(): RestErrorBody {
    const body: RestErrorBody = { code: this.restCode, message: this.message };
    if (this.errors) body.errors = this.errors;
    return body;
  }
}

export function isMockcloudError(err: unknown): err is MockcloudError {
  return err instanceof MockcloudError;
}

/** What a thrown value says: an Error's message, anything else as a string. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Any thrown value as a MockcloudError; unknown errors become InternalError. */
export function toMockcloudError(err: unknown): MockcloudError {
  if (err instanceof MockcloudError) return err;
  return new MockcloudError('InternalError', messageOf(err), { cause: err });
}

/** Shorthands for the common cases, so call sites read as what went wrong. */
export const errors = {
  notFound: (message: string) => new MockcloudError('ResourceNotFound', message),
  invalidArgument: (message: string, errs?: FieldError[]) =>
    new MockcloudError('InvalidArgument', message, errs ? { errors: errs } : {}),
  validation: (message: string, errs: FieldError[]) =>
    new MockcloudError('ValidationFailed', message, { errors: errs }),
  conflict: (message: string) => new MockcloudError('Conflict', message),
  internal: (message: string, cause?: unknown) =>
    new MockcloudError('InternalError', message, { cause }),
};
