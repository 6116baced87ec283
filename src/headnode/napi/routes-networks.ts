/**
 * The dev NAPI's network routes (sdc-napi lib/endpoints/networks/*.js, network-pools.js,
 * search.js): networks, a network's IPs (list, get, update), NIC provisioning on a network or
 * a network pool, network pools, and IP search. Objects with an etag answer restify's
 * conditional requests, as NAPI mounts `conditionalRequest()` in front of them.
 */
import type { Logger } from '../../common/log.js';
import type { NapiContext } from './context.js';
import { notFound } from './errors.js';
import { params, route, type RestifyServer } from '../http.js';
import { getIp, listIps, searchIps, updateIp } from './ips.js';
import { serializeNetwork } from './model.js';
import { createNetwork, deleteNetwork, getNetwork, listNetworks, updateNetwork } from './networks.js';
import { createNic } from './nics.js';
import { createPool, deletePool, getPool, listPools, serializePool, updatePool } from './pools.js';
import { checkConditional } from './conditional.js';
import { findNetwork } from './validators.js';
import { nicWire } from './nics.js';

export function mountNetworkRoutes(server: RestifyServer, ctx: NapiContext, log: Logger): void {
  const r = (fn: Parameters<typeof route>[1]) => route(log, fn);

  // --- networks
  const listNets = r((req) => ({ status: 200, body: listNetworks(ctx, params(req)).map((n) => serializeNetwork(n)) }));
  server.get('/networks', listNets);
  server.head('/networks', listNets);
  server.post('/networks', r(async (req) => ({ status: 200, body: serializeNetwork(await createNetwork(ctx, params(req))) })));
  const getNet = r((req) => {
    const { network, fields } = getNetwork(ctx, params(req));
    return checkConditional(req, network.etag) ?? { status: 200, body: serializeNetwork(network, fields), headers: { Etag: network.etag } };
  });
  server.get('/networks/:uuid', getNet);
  server.head('/networks/:uuid', getNet);
  server.put('/networks/:uuid', r(async (req) => {
    const existing = getNetwork(ctx, { uuid: req.params.uuid }).network;
    const cond = checkConditional(req, existing.etag);
    if (cond) return cond;
    const p = params(req);
    delete p.uuid;
    const net = await updateNetwork(ctx, existing, p);
    return { status: 200, body: serializeNetwork(net), headers: { Etag: net.etag } };
  }));
  server.del('/networks/:uuid', r(async (req) => {
    const existing = getNetwork(ctx, { uuid: req.params.uuid }).network;
    const cond = checkConditional(req, existing.etag);
    if (cond) return cond;
    await deleteNetwork(ctx, existing);
    return { status: 204 };
  }));

  // --- a network's IPs (`ensureNetworkExists`: an unknown or malformed network is a 404)
  const networkOf = (id: unknown) => {
    const net = typeof id === 'string' ? findNetwork(ctx.state, id) : undefined;
    if (!net) throw notFound('network not found');
    return net;
  };
  const ips = r((req) => {
    const net = networkOf(req.params.network_uuid);
    const p = params(req);
    delete p.network_uuid;
    return { status: 200, body: listIps(ctx, net, p) };
  });
  server.get('/networks/:network_uuid/ips', ips);
  server.head('/networks/:network_uuid/ips', ips);
  server.get('/networks/:network_uuid/ips/:ip_addr', r((req) => ({
    status: 200,
    body: getIp(ctx, networkOf(req.params.network_uuid), req.params.ip_addr),
  })));
  server.put('/networks/:network_uuid/ips/:ip_addr', r(async (req) => {
    const net = networkOf(req.params.network_uuid);
    return { status: 200, body: await updateIp(ctx, net, req.params.ip_addr, params(req)) };
  }));

  // --- NIC provisioning on a network or a pool
  server.post('/networks/:network_uuid/nics', r(async (req) => {
    const nic = await createNic(ctx, params(req));
    return { status: 200, body: nicWire(ctx, nic), headers: { Etag: nic.etag } };
  }));

  // --- network pools
  const listP = r((req) => ({ status: 200, body: listPools(ctx, params(req)).map((p) => serializePool(ctx, p)) }));
  server.get('/network_pools', listP);
  server.head('/network_pools', listP);
  server.post('/network_pools', r(async (req) => {
    const pool = await createPool(ctx, params(req));
    return { status: 200, body: serializePool(ctx, pool), headers: { Etag: pool.etag } };
  }));
  const getP = r((req) => {
    const pool = getPool(ctx, params(req));
    return checkConditional(req, pool.etag) ?? { status: 200, body: serializePool(ctx, pool), headers: { Etag: pool.etag } };
  });
  server.get('/network_pools/:uuid', getP);
  server.head('/network_pools/:uuid', getP);
  server.put('/network_pools/:uuid', r(async (req) => {
    const old = getPool(ctx, { uuid: req.params.uuid });
    const cond = checkConditional(req, old.etag);
    if (cond) return cond;
    const pool = await updatePool(ctx, old, params(req));
    return { status: 200, body: serializePool(ctx, pool), headers: { Etag: pool.etag } };
  }));
  server.del('/network_pools/:uuid', r(async (req) => {
    const pool = getPool(ctx, { uuid: req.params.uuid });
    const cond = checkConditional(req, pool.etag);
    if (cond) return cond;
    await deletePool(ctx, pool);
    return { status: 204 };
  }));

  // --- IP search
  server.get('/search/ips', r((req) => ({ status: 200, body: searchIps(ctx, params(req)) })));
}
