/**
 * Link aggregations (sdc-napi lib/models/aggregation.js, lib/endpoints/aggregations.js): a
 * server's NICs bonded under an interface name (`<server uuid>-<name>` is the id), with an
 * LACP mode and the nic tags the aggregation provides. Mock CNs report none of their own;
 * operators and tests create them as on any DC. Changes go out on the changefeed.
 */
import type { NapiContext } from './context.js';
import { duplicateParam, invalidParam, invalidParamsError, notFound } from './errors.js';
import { formatMac, parseMac } from './addr.js';
import { etagOf, type AggregationRecord } from './model.js';
import { arrayify, limit, nicTagName, offset, page, problem, string, uuid, validateParams, type Schema } from './validate.js';
import { nicTagsExist, type StateCtx } from './validators.js';

const LACP_MODES = ['off', 'active', 'passive'];
const MAX_AGGR_MACS = 16;

function lacpMode(_: unknown, name: string, v: unknown): string {
  string(null, name, v);
  if (!LACP_MODES.includes(v as string)) throw problem(invalidParam(name, `Invalid LACP mode. Supported modes: ${LACP_MODES.join(', ')}`));
  return v as string;
}

/** `validateInterfaceName`: a nic tag name that ends in a number. */
function interfaceName(ctx: unknown, name: string, v: unknown): string {
  const s = nicTagName(ctx, name, v);
  if (!/\d$/.test(s)) throw problem(invalidParam(name, 'must end in a number'));
  return s;
}

/** `validateMACs`: up to 16 known NICs, all of one server. */
function aggrMacs(ctx: StateCtx, name: string, v: unknown): { multi: Record<string, unknown> } {
  if (typeof v !== 'string' && !Array.isArray(v)) throw problem(invalidParam(name, 'must be an array of MAC addresses'));
  const invalid = new Set<string>();
  const macs: number[] = [];
  for (const m of arrayify(v)) {
    if (typeof m !== 'string') {
      invalid.add(typeof m === 'object' ? 'object' : String(m));
      continue;
    }
    const n = parseMac(m);
    if (n === undefined) invalid.add(m);
    else if (!macs.includes(n)) macs.push(n);
  }
  if (invalid.size) throw problem(invalidParam(name, 'invalid MAC addresses', { invalid: [...invalid].sort() }));
  if (macs.length > MAX_AGGR_MACS) throw problem(invalidParam(name, `maximum of ${MAX_AGGR_MACS} MAC addresses supported`));
  if (macs.length === 0) throw problem(invalidParam(name, 'must specify at least one MAC address'));
  const unknown = macs.filter((m) => !ctx.state.nics.has(m)).map(formatMac);
  if (unknown.length) throw problem(invalidParam(name, 'unknown MAC addresses', { invalid: unknown.sort() }));
  const nics = macs.map((m) => ctx.state.nics.get(m)!);
  if (nics.some((n) => n.belongs_to_uuid !== nics[0]!.belongs_to_uuid)) {
    throw problem(invalidParam(name, 'belongs_to_uuid must match for all nics in the aggregation'));
  }
  const notServer = nics.filter((n) => n.belongs_to_type !== 'server').map((n) => formatMac(n.mac));
  if (notServer.length) {
    throw problem(invalidParam(name, 'all nics must have belongs_to_uuid of type server', { invalid: notServer.sort() }));
  }
  return { multi: { [name]: macs, belongs_to_uuid: nics[0]!.belongs_to_uuid } };
}

/** `validate.MACarray` (list filter). */
function macArray(_: unknown, name: string, v: unknown): number[] {
  const bad: unknown[] = [];
  const out: number[] = [];
  for (const m of arrayify(v)) {
    const n = parseMac(m);
    if (n === undefined) bad.push(m);
    else out.push(n);
  }
  if (bad.length) throw problem(invalidParam(name, `invalid MAC address${bad.length === 1 ? '' : 'es'}`, { invalid: bad }));
  return out;
}

export function serializeAggr(a: AggregationRecord): Record<string, unknown> {
  return {
    belongs_to_uuid: a.belongs_to_uuid,
    id: a.id,
    lacp_mode: a.lacp_mode,
    name: a.name,
    macs: a.macs.map(formatMac),
    ...(a.nic_tags_provided ? { nic_tags_provided: a.nic_tags_provided } : {}),
  };
}

const LIST_SCHEMA: Schema<StateCtx> = {
  strict: true,
  optional: { belongs_to_uuid: uuid, macs: macArray, nic_tags_provided: nicTagsExist, limit, offset },
};

export function listAggrs(ctx: NapiContext, params: Record<string, unknown>): AggregationRecord[] {
  const parsed = validateParams(LIST_SCHEMA, ctx, params);
  const out = [...ctx.state.aggregations.values()].filter((a) => {
    if (parsed.belongs_to_uuid !== undefined && a.belongs_to_uuid !== parsed.belongs_to_uuid) return false;
    if (parsed.macs && !(parsed.macs as number[]).some((m) => a.macs.includes(m))) return false;
    const tags = parsed.nic_tags_provided as string[] | undefined;
    if (tags && !tags.some((t) => (a.nic_tags_provided ?? []).includes(t))) return false;
    return true;
  });
  return page(out, parsed);
}

export function getAggr(ctx: NapiContext, id: unknown): AggregationRecord {
  const parsed = validateParams({ required: { id: string } }, null, { id });
  const a = ctx.state.aggregations.get(parsed.id as string);
  if (!a) throw notFound('aggregation not found');
  return a;
}

function finish(a: AggregationRecord): AggregationRecord {
  a.id = `${a.belongs_to_uuid}-${a.name}`;
  if (a.nic_tags_provided && a.nic_tags_provided.length === 0) delete a.nic_tags_provided;
  a.etag = etagOf(a);
  return a;
}

export async function createAggr(ctx: NapiContext, params: Record<string, unknown>): Promise<AggregationRecord> {
  const parsed = validateParams<StateCtx>(
    {
      required: { name: interfaceName, macs: aggrMacs },
      optional: { lacp_mode: lacpMode, nic_tags_provided: nicTagsExist },
    },
    ctx,
    params,
  );
  const a = finish({
    id: '',
    belongs_to_uuid: parsed.belongs_to_uuid as string,
    name: parsed.name as string,
    macs: parsed.macs as number[],
    lacp_mode: (parsed.lacp_mode as string | undefined) ?? 'off',
    ...(parsed.nic_tags_provided ? { nic_tags_provided: parsed.nic_tags_provided as string[] } : {}),
    etag: '',
  });
  if (ctx.state.aggregations.has(a.id)) {
    throw invalidParamsError([duplicateParam('name', 'aggregation with same belongs_to_uuid and name already exists')], 'Invalid parameters');
  }
  ctx.state.aggregations.set(a.id, a);
  await ctx.commit();
  ctx.publish({
    changeKind: { resource: 'aggregation', subResources: ['create'] },
    changedResourceId: a.id,
    belongs_to_uuid: a.belongs_to_uuid,
    name: a.name,
    etag: a.etag,
  });
  return a;
}

export async function updateAggr(ctx: NapiContext, old: AggregationRecord, params: Record<string, unknown>): Promise<AggregationRecord> {
  const parsed = validateParams<StateCtx>(
    { optional: { lacp_mode: lacpMode, nic_tags_provided: nicTagsExist, macs: aggrMacs } },
    ctx,
    params,
  );
  const next: AggregationRecord = { ...old };
  if (parsed.lacp_mode !== undefined) next.lacp_mode = parsed.lacp_mode as string;
  if (parsed.nic_tags_provided !== undefined) next.nic_tags_provided = parsed.nic_tags_provided as string[];
  if (parsed.macs !== undefined) {
    next.macs = parsed.macs as number[];
    next.belongs_to_uuid = parsed.belongs_to_uuid as string;
  }
  // The record keeps its key (id); what is stored under it may name another server.
  const a = finish(next);
  a.id = old.id;
  ctx.state.aggregations.set(old.id, a);
  await ctx.commit();
  if ('lacp_mode' in params) {
    ctx.publish({
      changeKind: { resource: 'aggregation', subResources: ['lacp_mode'] },
      changedResourceId: a.id,
      belongs_to_uuid: a.belongs_to_uuid,
      name: a.name,
      etag: a.etag,
    });
  }
  return a;
}

export async function deleteAggr(ctx: NapiContext, a: AggregationRecord): Promise<void> {
  ctx.state.aggregations.delete(a.id);
  await ctx.commit();
  ctx.publish({
    changeKind: { resource: 'aggregation', subResources: ['delete'] },
    changedResourceId: a.id,
    belongs_to_uuid: a.belongs_to_uuid,
    name: a.name,
  });
}
