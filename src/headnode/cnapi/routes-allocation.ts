/**
 * `POST /allocate` (SelectServer) and `POST /capacity` (ServerCapacity), as sdc-cnapi
 * lib/endpoints/allocations.js serves them: CNAPI's parameter rules, then DAPI's checks of
 * image, package, VM and NIC tag requirements, each failure a `500 InvalidParameters` naming
 * the field; servers given to DAPI in shuffled chunks of 50; no server left is
 * `409 NoAllocatableServersError "No compute resources available: <reason>"`.
 */
import { MockcloudError } from '../../common/errors.js';
import { HttpStatusError } from '../../common/http-client.js';
import { localityFromAffinity, type AffinityRule, type VmLookup } from './dapi/affinity.js';
import { ok, params, route, type RestifyServer } from '../http.js';
import { serversForDapi } from './allocate.js';
import type { Allocator, Step } from './dapi/allocator.js';
import type { DapiServer, Obj, Ticket } from './dapi/algorithms.js';
import { isHash, validateImage, validateNicTagRequirements, validatePackage, validateVmPayload } from './dapi/validations.js';
import type { CnapiContext } from './context.js';
import { ensureParamsValid, invalidParam, type Rules } from './validate.js';

const UUID_RE = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/i;
const SERVER_CHUNK_SIZE = 50;

const ALLOC_RULES: Rules = {
  servers: { optional: true, type: 'array' },
  package: { optional: true, type: 'object' },
  image: { type: 'object' },
  vm: { type: 'object' },
  nic_tag_requirements: { optional: true, type: 'array' },
  nic_tags: { type: 'array' },
};

const CAPACITY_RULES: Rules = {
  servers: { optional: true, type: 'array' },
};

function checkServerUuids(servers: unknown): string[] | undefined {
  if (servers === undefined) return undefined;
  const list = servers as unknown[];
  if (!list.every((u) => typeof u === 'string' && UUID_RE.test(u))) throw invalidParam('servers', 'invalid server UUID');
  return list as string[];
}

function shuffle<T>(list: T[]): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

/** The reason of the step that left no server: its `*` reason, else its name as a phrase. */
function noServersReason(steps: Step[]): string {
  const failed = steps[steps.length - 1]!;
  const all = failed.reasons?.['*'];
  if (all) return all;
  let name = failed.step.charAt(0).toLowerCase() + failed.step.slice(1);
  if (name.startsWith('servers ')) name = `no ${name}`;
  return name;
}

/** DAPI's affinity-to-locality conversion, against the DC's VMAPI. */
async function resolveAffinity(ctx: CnapiContext, vm: Obj, reqId: string): Promise<{ locality?: Obj; error?: string }> {
  const vmapi = ctx.peers.vmapi;
  if (!vmapi) return { error: 'VMAPI is not configured' };
  const headers = { 'x-request-id': reqId };
  const lookup: VmLookup = {
    listVms: async (q) => (await ctx.http.call<Obj[]>({ method: 'GET', url: `${vmapi}/vms?${new URLSearchParams(q)}`, headers })).body,
    getVm: async (uuid, owner, fields) => {
      try {
        const q = new URLSearchParams({ owner_uuid: owner, fields });
        return (await ctx.http.call<Obj>({ method: 'GET', url: `${vmapi}/vms/${uuid}?${q}`, headers })).body;
      } catch (err) {
        if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
        throw err;
      }
    },
  };
  try {
    const locality = await localityFromAffinity(vm.affinity as AffinityRule[], String(vm.owner_uuid), lookup);
    return locality ? { locality } : {};
  } catch (err) {
    return { error: typeof err === 'string' ? err : (err as Error).message };
  }
}

export function mountAllocationRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;
  const allocator: Allocator = ctx.allocator;

  server.post(
    { path: '/allocate', name: 'SelectServer' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), ALLOC_RULES);
      const img = p.image as Obj;
      const pkg = p.package as Obj | undefined;
      const vm = p.vm as Obj;
      let err = validateImage(img);
      if (err) throw invalidParam('image', err);
      if (pkg) {
        err = validatePackage(pkg);
        if (err) throw invalidParam('package', err);
      }
      err = validateVmPayload(vm, isHash(img) ? img.requirements : undefined);
      if (err) throw invalidParam('vm', err);
      const uuids = checkServerUuids(p.servers);
      const tagReqs = p.nic_tag_requirements;
      if (tagReqs) {
        err = validateNicTagRequirements(tagReqs);
        if (err) throw invalidParam('nic_tag_requirements', err);
      }
      vm.nic_tag_requirements = tagReqs;
      const tags = p.nic_tags as unknown[];
      if (!tags.every((t) => typeof t === 'string')) throw invalidParam('nic_tags', 'invalid nic_tag');
      vm.nic_tags = tags;

      const candidates = shuffle(
        serversForDapi(ctx.servers, { uuids, unreservedOnly: true, filterHeadnode: allocator.defaults.filter_headnode }),
      );
      // allocations.js getOpenProvisioningTickets.
      const tickets: Ticket[] = ctx.waitlist.openProvisionTickets().map((t) => ({ ...t, action: t.action ?? '' }));
      const affinity = vm.affinity === undefined ? undefined : await resolveAffinity(ctx, vm, req.getId());
      const chunks: DapiServer[][] = [];
      for (let i = 0; i <= candidates.length; i += SERVER_CHUNK_SIZE) chunks.push(candidates.slice(i, i + SERVER_CHUNK_SIZE));
      let result: { server: DapiServer | undefined; steps: Step[] } | undefined;
      while (chunks.length > 0) {
        const chunk = chunks.pop()!;
        result = allocator.allocate(chunk, { vm, img, ...(pkg ? { pkg } : {}), tickets, ...(affinity ? { affinity } : {}) });
        for (const s of chunk) delete s.vms;
        if (result.server) break;
      }
      const { server: chosen, steps } = result!;
      if (!chosen) {
        // (CNAPI's VolumeServerNoResourcesError never fires: it looks for a step name DAPI
        // spells differently.)
        throw new MockcloudError('Conflict', `No compute resources available: ${noServersReason(steps)}`, {
          restCode: 'NoAllocatableServersError',
        });
      }
      return ok({ server: chosen, steps, imgapiPeers: [] });
    }),
  );

  server.post(
    { path: '/capacity', name: 'ServerCapacity' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), CAPACITY_RULES);
      const uuids = checkServerUuids(p.servers);
      const servers = serversForDapi(ctx.servers, { uuids, unreservedOnly: false, filterHeadnode: false });
      return ok({ capacities: allocator.serverCapacity(servers).capacities });
    }),
  );
}
