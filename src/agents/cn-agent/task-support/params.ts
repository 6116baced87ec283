/**
 * Checking task params at the edge. A wrong type is refused with 409 InvalidArgument (the
 * code restify gives the "Missing key" errors) before the task runs, so bad input never
 * writes anything; what the real tasks report as task errors (e.g. a bad shutdown timeout)
 * keeps its real message.
 */
import { MockcloudError } from '../../../common/errors.js';
import { isUuid } from '../../../common/uuid.js';
import type { TaskParams } from '../types.js';

export function invalid(message: string): MockcloudError {
  return new MockcloudError('InvalidArgument', message);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A VM (or image) uuid: required, lower-cased, never a path. */
export function uuidParam(p: TaskParams, key: string): string {
  const v = p[key];
  if (v === undefined) throw invalid(`Missing key '${key}' in params`);
  if (!isUuid(v)) throw invalid(`params.${key} must be a UUID (got ${JSON.stringify(v)?.slice(0, 80)})`);
  return v.toLowerCase();
}

export function optUuidParam(p: TaskParams, key: string): string | undefined {
  return p[key] === undefined || p[key] === null ? undefined : uuidParam(p, key);
}

export function stringParam(p: TaskParams, key: string): string {
  const v = p[key];
  if (v === undefined) throw invalid(`Missing key '${key}' in params`);
  if (typeof v !== 'string') throw invalid(`params.${key} must be a string (got ${describe(v)})`);
  return v;
}

export function optStringParam(p: TaskParams, key: string): string | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalid(`params.${key} must be a string (got ${describe(v)})`);
  return v;
}

/** `true` / `'true'` as the real tasks accept it for flags such as `idempotent`. */
export function flagParam(p: TaskParams, key: string): boolean {
  const v = p[key];
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  throw invalid(`params.${key} must be a boolean (got ${describe(v)})`);
}

export function optNumberParam(p: TaskParams, key: string): number | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`params.${key} must be a number (got ${describe(v)})`);
  return v;
}

export function optObjectParam(p: TaskParams, key: string): Record<string, unknown> | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) throw invalid(`params.${key} must be an object (got ${describe(v)})`);
  return v;
}

export function optArrayParam(p: TaskParams, key: string): unknown[] | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalid(`params.${key} must be an array (got ${describe(v)})`);
  return v;
}

/** A snapshot name as vmadm accepts it (64 chars of [A-Za-z0-9_.:%-]); never a path. */
export function snapshotNameParam(p: TaskParams, key = 'snapshot_name'): string {
  const v = stringParam(p, key);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:%-]{0,63}$/.test(v)) {
    throw invalid(`params.${key} must be 1 to 64 characters of [A-Za-z0-9_.:%-] (got ${JSON.stringify(v).slice(0, 80)})`);
  }
  return v;
}

/** An agent name as it becomes a directory under agents/: no separators, no dot names. */
export const AGENT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isAgentName(v: unknown): v is string {
  return typeof v === 'string' && AGENT_NAME_RE.test(v) && !v.includes('..');
}

/** The VM and snapshot of the machine_*_snapshot tasks. */
export interface SnapshotParams {
  uuid: string;
  name: string;
}

export const validateSnapshot = (p: TaskParams): SnapshotParams => ({
  uuid: uuidParam(p, 'uuid'),
  name: snapshotNameParam(p),
});
