/**
 * vmadm's errors as MockcloudErrors. Messages follow SmartOS vmadm and node-vmadm where
 * consumers match on them: cn-agent's destroy path looks for ": No such zone", and
 * machine_delete_snapshot ignores errors starting with "No snapshot named".
 */
import { MockcloudError, type FieldError } from '../common/errors.js';

export function vmNotFound(uuid: string): MockcloudError {
  return new MockcloudError('VmNotFound', `vmadm load ${uuid} failed: No such zone`, {
    restCode: 'VmNotFound',
  });
}

export function vmExists(uuid: string): MockcloudError {
  return new MockcloudError('VmAlreadyExists', `VM with UUID ${uuid} already exists`);
}

/** One or more fields with a bad value: "Invalid value(s) for: a,b" like vmadm. */
export function invalidValues(errs: FieldError[]): MockcloudError {
  const fields = [...new Set(errs.map((e) => e.field))];
  const detail = errs.map((e) => e.message).join('; ');
  return new MockcloudError('ValidationFailed', `Invalid value(s) for: ${fields.join(',')} (${detail})`, {
    errors: errs,
  });
}

export function invalidValue(field: string, message: string): MockcloudError {
  return invalidValues([{ field, code: 'Invalid', message }]);
}

/** A key that is not a property for this action (unknown, read-only or wrong brand). */
export function invalidProperty(action: 'create' | 'update', field: string, why: string): MockcloudError {
  return new MockcloudError('ValidationFailed', `Invalid property for ${action}: ${field} (${why})`, {
    errors: [{ field, code: 'Invalid', message: why }],
  });
}

export function snapshotNotFound(uuid: string, name: string): MockcloudError {
  return new MockcloudError('SnapshotNotFound', `No snapshot named "${name}" for ${uuid}`, {
    restCode: 'SnapshotNotFound',
  });
}

export function snapshotExists(name: string): MockcloudError {
  return new MockcloudError('Conflict', `snapshot with name "${name}" already exists.`);
}

/** An operation that the VM's current state does not allow (vmadm's wording). */
export function badState(message: string, code?: string): MockcloudError {
  return new MockcloudError('Conflict', message, code ? { restCode: code } : {});
}

export function unsupported(message: string): MockcloudError {
  return new MockcloudError('InvalidArgument', message);
}
