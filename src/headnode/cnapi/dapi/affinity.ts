/**
 * DAPI's affinity rules turned into locality hints (sdc-designation
 * lib/algorithms/shared/affinity.js `localityFromAffinity`), looking the VMs up in VMAPI as
 * DAPI does through CNAPI: tag rules by a tag predicate, instance rules by UUID, docker id,
 * alias (exact, glob, regex) or docker id prefix. Soft rules are dropped when hard ones are
 * present; a strict `==` rule that matches nothing is an error, other rules that match
 * nothing are dropped. Run before the (synchronous) allocator; its "Convert affinity to
 * locality hints" step then applies the result.
 */
import type { Obj } from './types.js';

export interface AffinityRule {
  key: string;
  operator: '==' | '!=';
  value: string;
  isSoft: boolean;
  valueType: 'exact' | 'glob' | 're';
}

/** The VMAPI calls DAPI makes (ListVms with a query, GetVm of one owner's VM; undefined on 404). */
export interface VmLookup {
  listVms(query: Record<string, string>): Promise<Obj[]>;
  getVm(uuid: string, ownerUuid: string, fields: string): Promise<Obj | undefined>;
}

const UUID_RE = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;

const isInst = (a: AffinityRule): boolean => a.key === 'container' || a.key === 'instance';
const show = (a: AffinityRule): string => `${a.key}${a.operator}${a.isSoft ? '~' : ''}${a.value}`;

function dockerIdToUuid(id: string): string {
  return `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`;
}

async function uuidsFor(a: AffinityRule, owner: string, vmapi: VmLookup, cache: { all?: Obj[] }): Promise<string[]> {
  const base = { owner_uuid: owner, state: 'active' };
  if (!isInst(a)) {
    const value = a.valueType === 're' ? '*' : a.value;
    const predicate = JSON.stringify({ or: [{ eq: [`tag.${a.key}`, value] }, { eq: [`tag.docker:label:${a.key}`, value] }] });
    const vms = await vmapi.listVms({ ...base, fields: 'uuid,alias,tags', predicate });
    if (a.valueType !== 're') return vms.map((v) => String(v.uuid));
    const re = new RegExp(a.value.slice(1, -1));
    return vms
      .filter((v) => {
        const tags = (v.tags ?? {}) as Obj;
        const tag = tags[a.key];
        const label = tags[`docker:label:${a.key}`];
        return (tag !== undefined && re.test(String(tag))) || (label !== undefined && re.test(String(label)));
      })
      .map((v) => String(v.uuid));
  }
  if (UUID_RE.test(a.value)) return [a.value];
  if (/^[a-f0-9]{64}$/.test(a.value)) {
    const uuid = dockerIdToUuid(a.value);
    const vm = await vmapi.getVm(uuid, owner, 'uuid,alias,state,internal_metadata,docker');
    const im = (vm?.internal_metadata ?? {}) as Obj;
    return vm && vm.docker && !['destroyed', 'failed'].includes(String(vm.state)) && im['docker:id'] === a.value ? [uuid] : [];
  }
  if (a.valueType === 'exact' || a.valueType === 'glob') {
    const quick = await vmapi.listVms({ ...base, fields: 'uuid,alias', predicate: JSON.stringify({ eq: ['alias', a.value] }) });
    if (quick.length) return quick.map((v) => String(v.uuid));
  }
  cache.all ??= await vmapi.listVms({ ...base, fields: 'uuid,alias,internal_metadata,docker' });
  const all = cache.all;
  if (a.valueType === 're') {
    const re = new RegExp(a.value.slice(1, -1));
    return all.filter((v) => v.alias && re.test(String(v.alias))).map((v) => String(v.uuid));
  }
  if (a.valueType === 'glob') {
    const re = new RegExp(`^${a.value.replace(/\*/g, '.*')}$`);
    return all.filter((v) => v.alias && re.test(String(v.alias))).map((v) => String(v.uuid));
  }
  const byName = all.find((v) => v.alias === a.value);
  if (byName) return [String(byName.uuid)];
  const byId = all.filter((v) => {
    const id = ((v.internal_metadata ?? {}) as Obj)['docker:id'];
    return v.docker && typeof id === 'string' && id.startsWith(a.value);
  });
  if (byId.length > 1) throw `Multiple matches: ${a.value}=${JSON.stringify(byId)}`;
  return byId.map((v) => String(v.uuid));
}

/** `localityFromAffinity`: the locality the rules mean, undefined when none; throws DAPI's reason text. */
export async function localityFromAffinity(rules: AffinityRule[], ownerUuid: string, vmapi: VmLookup): Promise<Obj | undefined> {
  if (rules.length === 0) return undefined;
  const hard = rules.filter((r) => !r.isSoft);
  const soft = rules.filter((r) => r.isSoft);
  const active = hard.length && soft.length ? hard : rules;
  const strict = hard.length > 0;
  const near: string[] = [];
  const far: string[] = [];
  const cache: { all?: Obj[] } = {};
  for (const a of active) {
    if (a.key === 'image') continue;
    const uuids = await uuidsFor(a, ownerUuid, vmapi, cache);
    if (uuids.length) {
      (a.operator === '==' ? near : far).push(...uuids);
      continue;
    }
    if (!strict || a.operator === '!=') continue;
    if (!isInst(a)) throw `no active containers found matching tag "${a.key}=${a.value}" for affinity "${show(a)}"`;
    throw `no active containers found matching "${a.value}" for affinity "${show(a)}"`;
  }
  if (!near.length && !far.length) return undefined;
  return { strict, ...(near.length ? { near } : {}), ...(far.length ? { far } : {}) };
}
