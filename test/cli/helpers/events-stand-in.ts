/**
 * The daemon's /events routes for scenario tests, whichever branch they run on: the real ones
 * when the daemon serves them (after the events branch is merged), else a stand-in in front of
 * the real daemon. The stand-in follows the issue-16 control API contract
 * (/work/notes/issue-16-contract.md: POST/GET/DELETE /events, DELETE /events/:id,
 * POST /events/marks, and the <data-dir>/events.jsonl lines) and passes every other request
 * to the real daemon unchanged, so create and delete steps, waits and marks' timing are the
 * real daemon's. The CLI reaches it through a data dir of its own whose daemon.json names the
 * stand-in's address (and the real daemon's pid).
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface EventsAccess {
  /** What the CLI's --data-dir is: the daemon's own, or the stand-in's. */
  cliDataDir: string;
  /** The control API the CLI talks to (the daemon's, or the stand-in's). */
  controlUrl: string;
  /** The event log to read (contract: one JSON line per start, end and mark). */
  eventLog: string;
  /** Whether these are the daemon's own routes. */
  real: boolean;
  close(): Promise<void>;
}

interface ActiveEvent {
  id: string;
  type: string;
  servers: string[];
  startedAt: string;
  endsAt?: string;
  params: unknown;
  seed?: unknown;
  source?: unknown;
  timer?: NodeJS.Timeout;
}

const TYPES = ['offline', 'partition', 'reboot', 'flap', 'slow-heartbeat', 'vm-crash', 'vm-reboot', 'zpool-fill', 'memory-pressure', 'task-fault', 'outbound-fault'];

/** The events routes of the daemon whose data dir is `dataDir`. */
export async function eventsAccess(dataDir: string): Promise<EventsAccess> {
  const daemonJson = JSON.parse(await fsp.readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as { control: { url: string; ip: string; port: number } };
  const realUrl = daemonJson.control.url;
  const probe = await fetch(`${realUrl}/events`);
  await probe.text();
  if (probe.status === 200) {
    return { cliDataDir: dataDir, controlUrl: realUrl, eventLog: path.join(dataDir, 'events.jsonl'), real: true, close: async () => {} };
  }
  const standInDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-events-stand-in-'));
  const eventLog = path.join(standInDir, 'events.jsonl');
  const active = new Map<string, ActiveEvent>();
  const log = (line: Record<string, unknown>): void => appendFileSync(eventLog, `${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
  const end = (ev: ActiveEvent): void => {
    if (ev.timer) clearTimeout(ev.timer);
    active.delete(ev.id);
    log({ id: ev.id, phase: 'end', type: ev.type, servers: ev.servers, params: ev.params, seed: ev.seed, ...(ev.source ? { source: ev.source } : {}) });
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const reply = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const url = new URL(req.url ?? '/', 'http://x');
      const seg = url.pathname.split('/').filter(Boolean);
      if (seg[0] !== 'events') {
        // Everything else is the real daemon's.
        fetch(`${realUrl}${req.url}`, { method: req.method, headers: text ? { 'content-type': 'application/json' } : {}, ...(text ? { body: text } : {}) }).then(
          async (r) => {
            res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
            res.end(await r.text());
          },
          (err: Error) => reply(502, { code: 'BadGateway', message: err.message }),
        );
        return;
      }
      const body = text ? (JSON.parse(text) as Record<string, any>) : {};
      if (seg.length === 1 && req.method === 'GET') {
        return reply(200, { active: [...active.values()].map(({ timer: _t, ...e }) => e) });
      }
      if (seg.length === 1 && req.method === 'DELETE') {
        const n = active.size;
        for (const ev of [...active.values()]) end(ev);
        return reply(200, { ended: n });
      }
      if (seg.length === 1 && req.method === 'POST') {
        if (!TYPES.includes(body.type)) return reply(400, { code: 'InvalidArgument', message: `unknown event type ${JSON.stringify(body.type)}` });
        const servers: string[] = Array.isArray(body.target?.servers) ? body.target.servers : [];
        const ev: ActiveEvent = { id: randomUUID(), type: body.type, servers, startedAt: new Date().toISOString(), params: body.params ?? {}, seed: body.seed, source: body.source };
        if (typeof body.durationMs === 'number') {
          ev.endsAt = new Date(Date.now() + body.durationMs).toISOString();
          ev.timer = setTimeout(() => end(ev), body.durationMs);
        }
        active.set(ev.id, ev);
        log({ id: ev.id, phase: 'start', type: ev.type, servers, params: ev.params, seed: ev.seed, ...(ev.source ? { source: ev.source } : {}) });
        return reply(201, { id: ev.id, type: ev.type, servers, startedAt: ev.startedAt, ...(ev.endsAt ? { endsAt: ev.endsAt } : {}) });
      }
      if (seg.length === 2 && seg[1] === 'marks' && req.method === 'POST') {
        log({ phase: 'mark', label: body.label, ...(body.source ? { source: body.source } : {}) });
        return reply(201, { label: body.label });
      }
      if (seg.length === 2 && req.method === 'DELETE') {
        const ev = active.get(seg[1]!);
        if (!ev) return reply(404, { code: 'ResourceNotFound', message: `event ${seg[1]} not found` });
        end(ev);
        return reply(200, { id: ev.id, ended: true });
      }
      reply(405, { code: 'MethodNotAllowed', message: `${req.method} is not allowed on ${url.pathname}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const controlUrl = `http://127.0.0.1:${port}`;
  await fsp.writeFile(path.join(standInDir, 'daemon.json'), JSON.stringify({ ...daemonJson, control: { ip: '127.0.0.1', port, url: controlUrl } }));
  return {
    cliDataDir: standInDir,
    controlUrl,
    eventLog,
    real: false,
    close: async () => {
      for (const ev of active.values()) if (ev.timer) clearTimeout(ev.timer);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fsp.rm(standInDir, { recursive: true, force: true });
    },
  };
}

/** The event log's lines (none when it does not exist yet). */
export async function readEventLog(file: string): Promise<Record<string, any>[]> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, any>);
}
