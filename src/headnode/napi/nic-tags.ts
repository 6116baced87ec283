/**
 * NIC tags (sdc-napi lib/models/nic-tag.js): unique names (422 `Duplicate` on `name`, which
 * CNAPI's sysinfo registration relies on to ignore existing tags), mtu 1500–9000 (admin
 * fixed at 1500), no rename or delete while a network uses the tag, admin never updated,
 * external never renamed.
 */
import type { NapiContext } from './context.js';
import { duplicateParam, invalidParam, MSG, missingParam, notFound, usedByParam, type NapiFieldError } from './errors.js';
import { etagOf, type NicTagRecord } from './model.js';
import { limit, nicTagMtu, nicTagName, offset, page, problem, uuid, validateParams, type Schema } from './validate.js';
import type { StateCtx } from './validators.js';
import { newUuid } from '../../common/uuid.js';

const CREATE_SCHEMA: Schema<StateCtx> = {
  required: {
    name: (ctx, name, v) => {
      const tag = nicTagName(ctx, name, v);
      if (ctx.state.nicTags.has(tag)) throw problem(duplicateParam(name));
      return tag;
    },
  },
  optional: { uuid, mtu: nicTagMtu },
  after: [
    (_ctx, _raw, parsed) => {
      if (parsed.name === 'admin' && parsed.mtu !== undefined && parsed.mtu !== 1500) {
        throw problem(invalidParam('mtu', MSG.adminMtu));
      }
    },
  ],
};

const LIST_SCHEMA: Schema<unknown> = { strict: true, optional: { limit, offset } };

function networksUsing(ctx: StateCtx, tag: string): NapiFieldError[] {
  return [...ctx.state.networks.values()]
    .filter((n) => n.nic_tag === tag)
    .map((n) => usedByParam('nic_tag', 'network', n.uuid));
}

export function listNicTags(ctx: NapiContext, params: Record<string, unknown>): NicTagRecord[] {
  const parsed = validateParams(LIST_SCHEMA, null, params);
  const tags = [...ctx.state.nicTags.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return page(tags, parsed);
}

export function getNicTag(ctx: NapiContext, name: unknown): NicTagRecord {
  const parsed = validateParams({ required: { name: nicTagName } }, null, { name });
  const tag = ctx.state.nicTags.get(parsed.name as string);
  if (!tag) throw notFound('nic tag not found');
  return tag;
}

/** Create without persisting or publishing (for the fresh-DC seed). */
export function addNicTag(ctx: StateCtx, params: Record<string, unknown>): NicTagRecord {
  const parsed = validateParams(CREATE_SCHEMA, ctx, params);
  const tag: NicTagRecord = {
    name: parsed.name as string,
    uuid: (parsed.uuid as string | undefined) ?? newUuid(),
    mtu: (parsed.mtu as number | undefined) ?? 1500,
    etag: '',
  };
  tag.etag = etagOf(tag);
  ctx.state.nicTags.set(tag.name, tag);
  return tag;
}

export async function createNicTag(ctx: NapiContext, params: Record<string, unknown>): Promise<NicTagRecord> {
  const tag = addNicTag(ctx, params);
  await ctx.commit();
  ctx.publish({ changeKind: { resource: 'nic_tag', subResources: ['create'] }, changedResourceId: tag.name, etag: tag.etag });
  return tag;
}

/** `PUT /nic_tags/:oldname`. */
export async function updateNicTag(ctx: NapiContext, oldname: string, params: Record<string, unknown>): Promise<NicTagRecord> {
  const schema: Schema<StateCtx> = {
    optional: { name: nicTagName, mtu: nicTagMtu },
    after: [
      (c, _raw, parsed) => {
        if (parsed.name !== undefined && parsed.name !== oldname) {
          const used = networksUsing(c, oldname);
          if (used.length > 0) throw problem(used);
        }
      },
      (_c, _raw, parsed) => {
        if (parsed.name === undefined && parsed.mtu === undefined) throw problem(missingParam('name'));
      },
      () => {
        if (oldname === 'admin') throw problem(invalidParam('name', 'admin nic tag cannot be updated'));
      },
      (_c, _raw, parsed) => {
        if (oldname === 'external' && parsed.name !== undefined && parsed.name !== 'external') {
          throw problem(invalidParam('name', 'external nic tag cannot be renamed'));
        }
      },
      (c, _raw, parsed) => {
        if (parsed.name !== undefined && parsed.name !== oldname && c.state.nicTags.has(parsed.name as string)) {
          throw problem(duplicateParam('name'));
        }
      },
      (c, _raw, parsed) => {
        if (typeof parsed.mtu !== 'number') return;
        const tooBig = [...c.state.networks.values()].filter((n) => n.nic_tag === oldname && n.mtu > (parsed.mtu as number));
        if (tooBig.length > 0) {
          throw problem(tooBig.map((n) => invalidParam('mtu', 'nic_tag mtu must be greater than its networks', { uuid: n.uuid })));
        }
      },
    ],
  };
  const parsed = validateParams(schema, ctx, params);
  const old = ctx.state.nicTags.get(oldname);
  if (!old) throw notFound('nic tag not found');
  const tag: NicTagRecord = {
    ...old,
    name: (parsed.name as string | undefined) ?? old.name,
    mtu: (parsed.mtu as number | undefined) ?? old.mtu,
  };
  tag.etag = etagOf(tag);
  ctx.state.nicTags.delete(oldname);
  ctx.state.nicTags.set(tag.name, tag);
  await ctx.commit();
  return tag;
}

export async function deleteNicTag(ctx: NapiContext, name: unknown): Promise<void> {
  const schema: Schema<StateCtx> = {
    required: { name: nicTagName },
    after: [
      (c, _raw, parsed) => {
        const used = networksUsing(c, parsed.name as string);
        if (used.length > 0) throw problem(used);
      },
    ],
  };
  const parsed = validateParams(schema, ctx, { name });
  if (!ctx.state.nicTags.delete(parsed.name as string)) throw notFound('nic tag not found');
  await ctx.commit();
  ctx.publish({ changeKind: { resource: 'nic_tag', subResources: ['delete'] }, changedResourceId: parsed.name as string });
}
