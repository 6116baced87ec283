/**
 * Waitlist tickets (sdc-cnapi lib/endpoints/waitlist.js): list, create, get, wait, release and
 * delete, with CNAPI's status codes. Where CNAPI's model asserts its input (and its process
 * dies on a bad request), the dev CNAPI answers `500 InternalError` with the assertion.
 */
import { MockcloudError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import { noContent, ok, params, route, type Params, type RestifyServer } from '../http.js';
import { requireServer, type CnapiContext } from './context.js';
import { ensureParamsValid, type Rules } from './validate.js';

const UPPER_LIMIT = 1000;
/** CNAPI's one-hour connection timeout bounds a wait on a ticket that never turns active. */
const WAIT_LIMIT_MS = 3600 * 1000;

const LIST_RULES: Rules = {
  limit: { optional: true, type: 'numberGte0', regex: /^[1-9][0-9]*$/ },
  offset: { optional: true, type: 'numberGte0', regex: /^([1-9][0-9]*|0)$/ },
  attribute: { optional: true, type: 'string', trim: true },
  server_uuid: { type: 'string', trim: true },
  order: { optional: true, type: 'string', trim: true },
};

function assertion(message: string): MockcloudError {
  return new MockcloudError('InternalError', message);
}

/** ModelWaitlist.createTicket's assertions on its input. */
function checkCreate(p: Params): void {
  for (const k of ['scope', 'id', 'expires_at'] as const) {
    if (typeof p[k] !== 'string') throw assertion(`opts.${k} (string) is required`);
  }
  if (p.action !== undefined && typeof p.action !== 'string') throw assertion('opts.action (string) is required');
  if (p.req_id !== undefined && typeof p.req_id !== 'string') throw assertion('opts.req_id (string) is required');
  if (p.extra !== undefined && (typeof p.extra !== 'object' || p.extra === null || Array.isArray(p.extra))) {
    throw assertion('opts.extra (object) is required');
  }
}

function ticketUuid(p: Params): string {
  const uuid = p.ticket_uuid;
  if (!isUuid(uuid)) throw assertion('uuid (uuid) is required');
  return uuid;
}

export function mountWaitlistRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;
  const waitlist = ctx.waitlist;

  server.get(
    { path: '/servers/:server_uuid/tickets', name: 'ServerWaitlistList' },
    route(log, (req) => {
      const p0 = params(req);
      requireServer(ctx, p0.server_uuid);
      const p = ensureParamsValid(p0, LIST_RULES, { strict: true });
      const limit = p.limit !== undefined ? Number.parseInt(String(p.limit), 10) : undefined;
      if (limit !== undefined && limit > UPPER_LIMIT) {
        throw new MockcloudError('InvalidArgument', `limit must be less than ${UPPER_LIMIT}`);
      }
      return ok(
        waitlist.list({
          server_uuid: String(p.server_uuid),
          ...(limit ? { limit } : {}),
          ...(p.offset ? { offset: Number.parseInt(String(p.offset), 10) } : {}),
          ...(p.order ? { order: String(p.order) } : {}),
          ...(p.attribute ? { attribute: String(p.attribute) } : {}),
        }),
      );
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/tickets', name: 'ServerWaitlistTicketCreate' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      checkCreate(p);
      const created = waitlist.create({
        server_uuid: s.uuid,
        scope: String(p.scope),
        id: String(p.id),
        expires_at: String(p.expires_at),
        ...(p.action !== undefined ? { action: String(p.action) } : {}),
        ...(p.req_id !== undefined ? { req_id: String(p.req_id) } : {}),
        ...(p.extra !== undefined ? { extra: p.extra as Record<string, unknown> } : {}),
      });
      await ctx.saveWaitlist();
      return ok(created, 202);
    }),
  );

  server.del(
    { path: '/servers/:server_uuid/tickets', name: 'ServerWaitlistTicketsDeleteAll' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      if (p.force !== 'true') throw new MockcloudError('PreconditionFailed', 'Will not delete all tickets without ?force=true');
      waitlist.deleteAll(s.uuid);
      await ctx.saveWaitlist();
      return noContent();
    }),
  );

  server.get(
    { path: '/tickets/:ticket_uuid', name: 'ServerWaitlistGetTicket' },
    route(log, (req) => {
      const uuid = ticketUuid(params(req));
      const t = waitlist.get(uuid);
      if (!t) throw new MockcloudError('ResourceNotFound', `ticket ${uuid} not found`);
      return ok(t);
    }),
  );

  server.get(
    { path: '/tickets/:ticket_uuid/wait', name: 'ServerWaitlistTicketsWait' },
    route(log, async (req) => {
      const uuid = ticketUuid(params(req));
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ticket ${uuid}`)), WAIT_LIMIT_MS);
      });
      try {
        await Promise.race([waitlist.wait(uuid), limit]);
      } catch (err) {
        const message = (err as Error).message;
        throw new MockcloudError(/^no such ticket/.test(message) ? 'ResourceNotFound' : 'InternalError', message);
      } finally {
        clearTimeout(timer);
      }
      return noContent();
    }),
  );

  server.put(
    { path: '/tickets/:ticket_uuid/release', name: 'ServerWaitlistTicketRelease' },
    route(log, async (req) => {
      const uuid = ticketUuid(params(req));
      if (!waitlist.finish(uuid, 'finished')) throw new MockcloudError('ResourceNotFound', `ticket ${uuid} not found`);
      await ctx.saveWaitlist();
      return noContent();
    }),
  );

  server.del(
    { path: '/tickets/:ticket_uuid', name: 'ServerWaitlistDeleteTickets' },
    route(log, async (req) => {
      const uuid = ticketUuid(params(req));
      // CNAPI answers a missing ticket here with 500, not 404.
      if (!waitlist.delete(uuid)) throw new MockcloudError('InternalError', `ticket ${uuid} not found`);
      await ctx.saveWaitlist();
      return noContent();
    }),
  );
}
