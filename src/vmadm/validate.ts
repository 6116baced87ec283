/**
 * Payload value checks and the normalisations vmadm applies on the way in: integers may
 * arrive as digit strings (CLI and some HTTP callers), lists as comma-separated strings.
 * Every failure names the field.
 */
import { isUuid } from '../common/uuid.js';
import { invalidValue } from './errors.js';
import type { PropType } from './properties.js';

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const ZPOOL_RE = /^[a-zA-Z][a-zA-Z0-9_.:-]*$/;

/**
 * Returns the normalised value, or throws a validation error naming `field`.
 * `null` is passed through for integer/string properties: vmadm uses it to unset them.
 */
export function checkValue(field: string, type: PropType, value: unknown): unknown {
  switch (type) {
    case 'string':
      if (typeof value === 'string' || value === null) return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      throw invalidValue(field, `${field} must be a string`);
    case 'integer': {
      if (value === null || value === '') return null;
      const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
        throw invalidValue(field, `${field} must be an integer, got ${JSON.stringify(value)}`);
      }
      if (n < 0) throw invalidValue(field, `${field} must not be negative`);
      return n;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true') return true;
      if (value === 'false') return false;
      throw invalidValue(field, `${field} must be a boolean`);
    case 'uuid':
      if (isUuid(value)) return value.toLowerCase();
      throw invalidValue(field, `${field} must be a UUID`);
    case 'zpool':
      if (typeof value === 'string' && ZPOOL_RE.test(value)) return value;
      throw invalidValue(field, `${field} must be a zpool name`);
    case 'list': {
      const list = typeof value === 'string' ? value.split(',').filter((s) => s.length > 0) : value;
      if (!Array.isArray(list)) throw invalidValue(field, `${field} must be an array`);
      for (const item of list) {
        if (typeof item !== 'string' && typeof item !== 'number') {
          throw invalidValue(field, `${field} must be an array of strings`);
        }
      }
      return list;
    }
    case 'flat-object':
      if (!isPlainObject(value)) throw invalidValue(field, `${field} must be an object`);
      for (const [k, v] of Object.entries(value)) {
        if (v !== null && typeof v === 'object') {
          throw invalidValue(`${field}.${k}`, `${field} values must be strings, numbers or booleans`);
        }
      }
      return value;
    case 'object-array':
      if (!Array.isArray(value) || !value.every(isPlainObject)) {
        throw invalidValue(field, `${field} must be an array of objects`);
      }
      return value;
  }
}

/** Deep copy of JSON data (payloads are JSON; this also drops functions and undefined). */
export function jsonClone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
