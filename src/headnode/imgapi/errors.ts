/**
 * IMGAPI's errors (sdc-imgapi lib/errors.js): each one's restCode, HTTP status and message as
 * IMGAPI words it, and the sample instances `GET /ping?error=NAME` answers with (app.js
 * apiPing), so a client can see how it handles each.
 */
import { MockcloudError, type ErrorCode, type FieldError } from '../../common/errors.js';

/** restCode → the catalogue code that gives IMGAPI's status. */
const STATUS: Record<string, ErrorCode> = {
  ValidationFailed: 'InvalidParameters', // 422
  InvalidParameter: 'InvalidParameters',
  ImageFilesImmutable: 'InvalidParameters',
  ImageAlreadyActivated: 'InvalidParameters',
  NoActivationNoFile: 'InvalidParameters',
  OperatorOnly: 'Forbidden', // 403
  ImageUuidAlreadyExists: 'Conflict', // 409
  Upload: 'BadRequest', // 400
  Download: 'BadRequest',
  ImageFileTooBig: 'BadRequest',
  StorageIsDown: 'ServiceUnavailable', // 503
  StorageUnsupported: 'ServiceUnavailable',
  RemoteSourceError: 'ServiceUnavailable',
  OwnerDoesNotExist: 'InvalidParameters',
  AccountDoesNotExist: 'InvalidParameters',
  NotImageOwner: 'InvalidParameters',
  ImageNotShared: 'InvalidParameters',
  NotMantaPathOwner: 'InvalidParameters',
  OriginDoesNotExist: 'InvalidParameters',
  OriginIsNotActive: 'InvalidParameters',
  InsufficientServerVersion: 'InvalidParameters',
  NotAvailable: 'NotImplemented', // 501
  ImageHasDependentImages: 'InvalidParameters',
  NotImplemented: 'BadRequest', // IMGAPI's own NotImplementedError is a 400
  InternalError: 'InternalError',
  ResourceNotFound: 'ResourceNotFound',
  InvalidHeader: 'InvalidHeader',
  ServiceUnavailable: 'ServiceUnavailable',
  Unauthorized: 'NotAuthorized',
  BadRequest: 'BadRequest',
};

/** An IMGAPI error: `{code, message[, errors]}` with IMGAPI's status for the code. */
export function imgapiError(restCode: string, message: string, errors?: FieldError[]): MockcloudError {
  const code = STATUS[restCode] ?? 'InternalError';
  return new MockcloudError(code, message, { restCode, ...(errors ? { errors } : {}) });
}

/** An element of an `errors` list; IMGAPI often gives only field and code. */
export function fieldErr(field: string, code: string, message?: string): FieldError {
  return (message === undefined ? { field, code } : { field, code, message }) as FieldError;
}

export const imgapiErrors = {
  validationFailed: (message: string, errors: FieldError[]) => imgapiError('ValidationFailed', message, errors),
  invalidParameter: (message: string, errors: FieldError[]) => imgapiError('InvalidParameter', message, errors),
  operatorOnly: () => imgapiError('OperatorOnly', 'this endpoint may only be called by an operator'),
  notImageOwner: (account: string, image: string) => imgapiError('NotImageOwner', `account ${account} is not the owner of image ${image}`),
  /** IMGAPI's message names the account and the image the other way round; kept as it is. */
  imageNotShared: (account: string, image: string) => imgapiError('ImageNotShared', `Image ${account} is not shared with account ${image}`),
  notFound: (message: string) => imgapiError('ResourceNotFound', message),
  invalidAccount: (account: string) =>
    imgapiError('InvalidParameter', `invalid "account": not a UUID: "${account}"`, [fieldErr('account', 'Invalid')]),
};

/** Every error name apiPing knows (lib/errors.js's exports), and those it has a sample of. */
const KNOWN = [
  'ValidationFailedError', 'InvalidParameterError', 'ImageFilesImmutableError', 'ImageAlreadyActivatedError',
  'NoActivationNoFileError', 'OperatorOnlyError', 'ImageUuidAlreadyExistsError', 'UploadError', 'DownloadError',
  'StorageIsDownError', 'StorageUnsupportedError', 'RemoteSourceError', 'OwnerDoesNotExistError', 'ImageNotSharedError',
  'AccountDoesNotExistError', 'NotImageOwnerError', 'NotMantaPathOwnerError', 'OriginDoesNotExistError',
  'OriginIsNotActiveError', 'InsufficientServerVersionError', 'ImageHasDependentImagesError', 'NotAvailableError',
  'NotImplementedError', 'InternalError', 'ResourceNotFoundError', 'InvalidHeaderError', 'ServiceUnavailableError',
  'UnauthorizedError', 'BadRequestError',
];

const SAMPLES: Record<string, () => MockcloudError> = {
  ValidationFailedError: () => imgapiError('ValidationFailed', 'boom', []),
  InvalidParameterError: () => imgapiError('InvalidParameter', 'invalid "foo"', [fieldErr('foo', 'Invalid')]),
  ImageFilesImmutableError: () => imgapiError('ImageFilesImmutable', 'cannot modify files on activated image 82ce32a2-9cb4-9a4c-a303-7a63254bacf4'),
  ImageAlreadyActivatedError: () => imgapiError('ImageAlreadyActivated', 'image "ed8cd007-2065-0140-8d41-e32247b71748" is already activated'),
  NoActivationNoFileError: () =>
    imgapiError('NoActivationNoFile', 'image "ed8cd007-2065-0140-8d41-e32247b71748" cannot be activated: it has no file'),
  OperatorOnlyError: () => imgapiErrors.operatorOnly(),
  ImageUuidAlreadyExistsError: () => imgapiError('ImageUuidAlreadyExists', 'image uuid "undefined" already exists'),
  StorageIsDownError: () => imgapiError('StorageIsDown', 'storage is down at the moment'),
  StorageUnsupportedError: () => imgapiError('StorageUnsupported', 'storage type is unsupported'),
  RemoteSourceError: () => imgapiError('RemoteSourceError', ''),
  InternalError: () => imgapiError('InternalError', 'boom'),
};

/** `GET /ping?error=NAME`: the sample error of that name (`Error` appended), as apiPing answers. */
export function pingError(requested: string): MockcloudError {
  let name = requested || 'InternalError';
  if (!name.endsWith('Error')) name += 'Error';
  if (!KNOWN.includes(name)) return imgapiErrors.invalidParameter(`unknown error: ${name}`, [fieldErr('error', 'Missing')]);
  return SAMPLES[name]?.() ?? imgapiError('InternalError', `do not have a sample "${name}" error`);
}
