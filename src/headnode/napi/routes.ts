/**
 * The dev NAPI's HTTP routes (sdc-napi lib/endpoints/*): ping, nic tags, NICs with ETags and
 * restify's conditional-request rules (conditional.ts), aggregations, the changefeed's plain routes, /manage/gc,
 * and the fabric routes (answered as a NAPI without overlay networking answers them). The
 * network, IP, pool and search routes are in routes-networks.ts.
 */
import { MockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { ChangefeedPublisher } from '../../common/changefeed/publisher.js';
import { CHANGEFEED_PATH, CHANGEFEED_STATS_PATH } from '../../common/changefeed/protocol.js';
import type { NapiContext } from './context.js';
import { params, route, type Reply, type RestifyServer } from '../http.js';
import { serializeNicTag, type NicRecord } from './model.js';
import { createAggr, deleteAggr, getAggr, listAggrs, serializeAggr, updateAggr } from './aggregations.js';
import { createNicTag, deleteNicTag, getNicTag, listNicTags, updateNicTag } from './nic-tags.js';
import { createNic, deleteNic, getNic, listNics, nicWire, updateNic } from './nics.js';
import { mountNetworkRoutes } from './routes-networks.js';
import { checkConditional } from './conditional.js';

function nicReply(ctx: NapiContext, nic: NicRecord): Reply {
  return { status: 200, body: nicWire(ctx, nic), headers: { Etag: nic.etag } };
}

export function mountNapiRoutes(server: RestifyServer, ctx: NapiContext, changefeed: ChangefeedPublisher, log: Logger): void {
  const r = (fn: Parameters<typeof route>[1]) => route(log, fn);

  const ping = r(() => ({
    status: 200,
    body: { config: { fabrics_enabled: false, subnet_alloc_enabled: false }, healthy: true, services: { moray: 'online' }, status: 'OK' },
  }));
  server.get('/ping', ping);
  server.head('/ping', ping);

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

  mountNetworkRoutes(server, ctx, log);

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

  // --- aggregations
  const listAggr = r((req) => ({ status: 200, body: listAggrs(ctx, params(req)).map(serializeAggr) }));
  server.get('/aggregations', listAggr);
  server.head('/aggregations', listAggr);
  server.post('/aggregations', r(async (req) => {
    const a = await createAggr(ctx, params(req));
    return { status: 200, body: serializeAggr(a), headers: { Etag: a.etag } };
  }));
  const getOneAggr = r((req) => {
    const a = getAggr(ctx, req.params.id);
    return checkConditional(req, a.etag) ?? { status: 200, body: serializeAggr(a), headers: { Etag: a.etag } };
  });
  server.get('/aggregations/:id', getOneAggr);
  server.head('/aggregations/:id', getOneAggr);
  server.put('/aggregations/:id', r(async (req) => {
    const old = getAggr(ctx, req.params.id);
    const cond = checkConditional(req, old.etag);
    if (cond) return cond;
    const p = params(req);
    delete p.id;
    const a = await updateAggr(ctx, old, p);
    return { status: 200, body: serializeAggr(a), headers: { Etag: a.etag } };
  }));
  server.del('/aggregations/:id', r(async (req) => {
    const a = getAggr(ctx, req.params.id);
    const cond = checkConditional(req, a.etag);
    if (cond) return cond;
    await deleteAggr(ctx, a);
    return { status: 204 };
  }));

  // --- /manage/gc: NAPI runs with --expose-gc and reports memory around two collections
  const gc = r(() => {
    const usage = (): Record<string, number> => ({ ...process.memoryUsage(), time: Date.now() });
    const start = usage();
    const collect = (globalThis as { gc?: () => void }).gc;
    collect?.();
    collect?.();
    return { status: 200, body: { start, end: usage() } };
  });
  server.get('/manage/gc', gc);
  server.head('/manage/gc', gc);

  // --- fabrics: overlay networking is not enabled in the dev DC (`fabrics_enabled: false`)
  const noOverlay = r(() => {
    // restify 4's PreconditionRequiredError, an HttpError: its body code is the error's name.
    throw new MockcloudError('PreconditionRequired', 'overlay networking is not enabled', { restCode: 'PreconditionRequiredError' });
  });
  const vlans = '/fabrics/:owner_uuid/vlans';
  server.get(vlans, noOverlay);
  server.post(vlans, noOverlay);
  server.get(`${vlans}/:vlan_id`, noOverlay);
  server.put(`${vlans}/:vlan_id`, noOverlay);
  server.del(`${vlans}/:vlan_id`, noOverlay);
  server.get(`${vlans}/:vlan_id/networks`, noOverlay);
  server.post(`${vlans}/:vlan_id/networks`, noOverlay);
  server.get(`${vlans}/:vlan_id/networks/:uuid`, noOverlay);
  server.put(`${vlans}/:vlan_id/networks/:uuid`, noOverlay);
  server.del(`${vlans}/:vlan_id/networks/:uuid`, noOverlay);

  // --- changefeed (the websocket itself is an HTTP upgrade, see ChangefeedPublisher)
  server.get(CHANGEFEED_PATH, r(() => ({ status: 200, body: changefeed.resourcesBody() })));
  server.get(CHANGEFEED_STATS_PATH, r(() => ({ status: 200, body: changefeed.statsBody() })));
}
