/**
 * The dev NAPI's HTTP routes (sdc-napi lib/endpoints/*): nic tags, networks and their IPs
 * and NIC provisioning, NICs with ETags and restify's conditional-request rules, the
 * changefeed's plain routes, and ping.
 */
import { MockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { ChangefeedPublisher } from '../../common/changefeed/publisher.js';
import { CHANGEFEED_PATH, CHANGEFEED_STATS_PATH } from '../../common/changefeed/protocol.js';
import type { NapiContext } from './context.js';
import { params, route, type Req, type Reply, type RestifyServer } from '../http.js';
import { serializeNetwork, serializeNicTag, type NicRecord } from './model.js';
import { createNetwork, deleteNetwork, getIp, getNetwork, listIps, listNetworks, updateNetwork } from './networks.js';
import { createNicTag, deleteNicTag, getNicTag, listNicTags, updateNicTag } from './nic-tags.js';
import { createNic, deleteNic, getNic, listNics, nicWire, updateNic } from './nics.js';
import { findNetwork } from './validators.js';

/**
 * restify's `conditionalRequest()` as NAPI mounts it in front of `/nics/:mac`: an
 * `If-Match` that names neither `*` nor the current etag is 412; an `If-None-Match` that
 * names it is 304 for GET/HEAD and 412 otherwise.
 */
function checkConditional(req: Req, etag: string): Reply | undefined {
  const normalize = (s: string): string => s.replace(/^W\//, '').replace(/^"(\w*)"$/, '$1');
  const ifMatch = req.headers['if-match'];
  if (ifMatch) {
    const tags = ifMatch.split(/\s*,\s*/).map(normalize);
    if (!tags.some((t) => t === '*' || t === etag)) {
      throw new MockcloudError('PreconditionFailed', `if-match '${ifMatch}' didn't match etag '${etag}'`);
    }
  }
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch) {
    const tags = ifNoneMatch.split(/\s*,\s*/).map(normalize);
    if (tags.some((t) => t === '*' || t === etag)) {
      if (req.method === 'GET' || req.method === 'HEAD') return { status: 304, headers: { Etag: etag } };
      throw new MockcloudError('PreconditionFailed', `if-none-match '${ifNoneMatch}' matched etag '${etag}'`);
    }
  }
  return undefined;
}

function nicReply(ctx: NapiContext, nic: NicRecord): Reply {
  return { status: 200, body: nicWire(ctx, nic), headers: { Etag: nic.etag } };
}

export function mountNapiRoutes(server: RestifyServer, ctx: NapiContext, changefeed: ChangefeedPublisher, log: Logger): void {
  const r = (fn: Parameters<typeof route>[1]) => route(log, fn);

  server.get('/ping', r(() => ({
    status: 200,
    body: { config: { fabrics_enabled: false, subnet_alloc_enabled: false }, healthy: true, services: { moray: 'online' }, status: 'OK' },
  })));

  // --- nic tags
  const listTags = r((req) => ({ status: 200, body: listNicTags(ctx, params(req)).map(serializeNicTag) }));
  server.get('/nic_tags', listTags);
  server.head('/nic_tags', listTags);
  server.post('/nic_tags', r(async (req) => ({ status: 200, body: serializeNicTag(await createNicTag(ctx, params(req))) })));
  const getTag = r((req) => ({ status: 200, body: serializeNicTag(getNicTag(ctx, req.params.name)) }));
  server.get('/nic_tags/:name', getTag);
  server.head('/nic_tags/:name', getTag);
  server.put('/nic_tags/:name', r(async (req) => {
    const p = params(req);
    const oldname = String(req.params.name);
    delete p.name;
    const body = (req as unknown as { body?: Record<string, unknown> }).body;
    if (body && typeof body === 'object' && 'name' in body) p.name = body.name;
    const q = (req as unknown as { query?: Record<string, unknown> }).query;
    if (p.name === undefined && q && 'name' in q) p.name = q.name;
    return { status: 200, body: serializeNicTag(await updateNicTag(ctx, oldname, p)) };
  }));
  server.del('/nic_tags/:name', r(async (req) => {
    await deleteNicTag(ctx, req.params.name);
    return { status: 204 };
  }));

  // --- networks
  const listNets = r((req) => ({ status: 200, body: listNetworks(ctx, params(req)).map((n) => serializeNetwork(n)) }));
  server.get('/networks', listNets);
  server.head('/networks', listNets);
  server.post('/networks', r(async (req) => ({ status: 200, body: serializeNetwork(await createNetwork(ctx, params(req))) })));
  const getNet = r((req) => {
    const { network, fields } = getNetwork(ctx, params(req));
    return { status: 200, body: serializeNetwork(network, fields), headers: { Etag: network.etag } };
  });
  server.get('/networks/:uuid', getNet);
  server.head('/networks/:uuid', getNet);
  server.put('/networks/:uuid', r(async (req) => {
    const existing = getNetwork(ctx, { uuid: req.params.uuid }).network;
    const p = params(req);
    delete p.uuid;
    const net = await updateNetwork(ctx, existing, p);
    return { status: 200, body: serializeNetwork(net), headers: { Etag: net.etag } };
  }));
  server.del('/networks/:uuid', r(async (req) => {
    const existing = getNetwork(ctx, { uuid: req.params.uuid }).network;
    await deleteNetwork(ctx, existing);
    return { status: 204 };
  }));

  // --- a network's IPs and NIC provisioning
  const networkOf = (id: unknown) => {
    const net = typeof id === 'string' ? findNetwork(ctx.state, id) : undefined;
    if (!net) throw new MockcloudError('ResourceNotFound', 'network not found');
    return net;
  };
  server.get('/networks/:uuid/ips', r((req) => {
    const net = networkOf(req.params.uuid);
    const p = params(req);
    delete p.uuid;
    return { status: 200, body: listIps(ctx, net, p) };
  }));
  server.get('/networks/:uuid/ips/:ip_addr', r((req) => ({
    status: 200,
    body: getIp(ctx, networkOf(req.params.uuid), req.params.ip_addr),
  })));
  server.post('/networks/:uuid/nics', r(async (req) => {
    const p = params(req);
    p.network_uuid = req.params.uuid;
    delete p.uuid;
    return nicReply(ctx, await createNic(ctx, p));
  }));

  // --- NICs
  const listAll = r((req) => ({ status: 200, body: listNics(ctx, params(req)).map((n) => nicWire(ctx, n)) }));
  server.get('/nics', listAll);
  server.head('/nics', listAll);
  server.post('/nics', r(async (req) => nicReply(ctx, await createNic(ctx, params(req)))));
  const getOne = r((req) => {
    const nic = getNic(ctx, req.params.mac);
    return checkConditional(req, nic.etag) ?? nicReply(ctx, nic);
  });
  server.get('/nics/:mac', getOne);
  server.head('/nics/:mac', getOne);
  server.put('/nics/:mac', r(async (req) => {
    const nic = getNic(ctx, req.params.mac);
    const cond = checkConditional(req, nic.etag);
    if (cond) return cond;
    return nicReply(ctx, await updateNic(ctx, nic, params(req)));
  }));
  server.del('/nics/:mac', r(async (req) => {
    const nic = getNic(ctx, req.params.mac);
    const cond = checkConditional(req, nic.etag);
    if (cond) return cond;
    await deleteNic(ctx, nic);
    return { status: 204 };
  }));

  // --- aggregations: mock CNs have none (no `Link Aggregations` in their sysinfo), so the
  // list is empty and every id is unknown, as in a DC without aggregated links.
  server.get('/aggregations', r(() => ({ status: 200, body: [] })));
  server.get('/aggregations/:id', r(() => {
    throw new MockcloudError('ResourceNotFound', 'aggregation not found');
  }));

  // --- changefeed (the websocket itself is an HTTP upgrade, see ChangefeedPublisher)
  server.get(CHANGEFEED_PATH, r(() => ({ status: 200, body: changefeed.resourcesBody() })));
  server.get(CHANGEFEED_STATS_PATH, r(() => ({ status: 200, body: changefeed.statsBody() })));
}
