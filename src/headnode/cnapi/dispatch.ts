/**
 * How CNAPI talks to a CN's cn-agent (sdc-cnapi lib/models/server.js sendTaskRequest and
 * sendRequest), reproduced exactly where consumers can see it:
 *
 * - address: triton-netconfig's `agentIpFromSysinfo(sysinfo)` (the `CN Agent IP` of a
 *   `"System Type": "Virtual"` server, else the admin IP) and `CN Agent Port` parsed as an
 *   integer, 5309 when absent;
 * - `POST /tasks` with `x-server-uuid` and `x-request-id`, body `{task, params}`, one-hour
 *   timeouts;
 * - the task record is stored `active` before the POST and finished from the answer: any
 *   2xx is `complete` with the body as the finish event, anything else (or a connection
 *   error) is `failure` with `body.error || <error message>`.
 *
 * One shared HTTP client (one keep-alive agent) serves every CN.
 */
import { createRequire } from 'node:module';
import { STATUS_CODES } from 'node:http';
import type { JsonHttpClient, HttpResponse } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import type { TaskRecord, TaskRegistry } from './tasks.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as {
  agentIpFromSysinfo(sysinfo: unknown): string | null | undefined;
  adminIpFromSysinfo(sysinfo: unknown): string | null | undefined;
};

export const CN_AGENT_DEFAULT_PORT = 5309;
export const CN_AGENT_TIMEOUT_MS = 3600 * 1000;

/** What a finished task tells the synchronous callers (VmLoad, server_reboot, ...). */
export type TaskOutcome =
  | { ok: true; body: unknown }
  | { ok: false; message: string; statusCode?: number; body?: unknown };

export interface TaskRequest {
  serverUuid: string;
  sysinfo: Sysinfo | undefined;
  task: string;
  params: Record<string, unknown>;
  reqId: string;
  /** false for machine_load: no record is kept. */
  persist?: boolean;
}

export interface SentTask {
  record: TaskRecord;
  /** Settles when cn-agent answers; never rejects. */
  outcome: Promise<TaskOutcome>;
}

export function agentPort(sysinfo: Partial<Sysinfo> | undefined): number {
  if (sysinfo && Object.prototype.hasOwnProperty.call(sysinfo, 'CN Agent Port')) {
    const port = Number.parseInt(String(sysinfo['CN Agent Port']), 10);
    if (!Number.isNaN(port)) return port;
  }
  return CN_AGENT_DEFAULT_PORT;
}

/** The address tasks go to (sendTaskRequest's rule). */
export function taskAddress(sysinfo: Partial<Sysinfo> | undefined): { ip: string; port: number } | undefined {
  if (!sysinfo) return undefined;
  const ip = netconfig.agentIpFromSysinfo(sysinfo);
  return ip ? { ip, port: agentPort(sysinfo) } : undefined;
}

/** The address of history/pause/resume (sendRequest's rule: CN Agent IP whenever present). */
export function requestAddress(sysinfo: Partial<Sysinfo> | undefined): { ip: string; port: number } | undefined {
  if (!sysinfo) return undefined;
  const ip = (sysinfo['CN Agent IP'] as string | undefined) ?? netconfig.adminIpFromSysinfo(sysinfo);
  return ip ? { ip, port: agentPort(sysinfo) } : undefined;
}

function hostPort(a: { ip: string; port: number }): string {
  return a.ip.includes(':') ? `[${a.ip}]:${a.port}` : `${a.ip}:${a.port}`;
}

export class CnAgentDispatcher {
  private readonly http: JsonHttpClient;
  private readonly tasks: TaskRegistry;
  private readonly log: Logger;
  private inFlight = 0;

  constructor(opts: { http: JsonHttpClient; tasks: TaskRegistry; log: Logger }) {
    this.http = opts.http;
    this.tasks = opts.tasks;
    this.log = opts.log;
  }

  get tasksInFlight(): number {
    return this.inFlight;
  }

  /** Record the task and start the POST; the caller answers its client right away. */
  sendTask(req: TaskRequest): SentTask {
    const record = this.tasks.create(req.task, req.serverUuid, req.reqId, req.persist !== false);
    const outcome = this.post(req).then((result) => {
      if (result.ok) this.tasks.complete(record, result.body);
      else this.tasks.fail(record, result.message);
      return result;
    });
    return { record, outcome };
  }

  private async post(req: TaskRequest): Promise<TaskOutcome> {
    const addr = taskAddress(req.sysinfo);
    if (!addr) return { ok: false, message: 'Parsing server ip address in sendTaskReq (No admin NICs detected.)' };
    const url = `http://${hostPort(addr)}/tasks`;
    this.log.info({ server_uuid: req.serverUuid, task: req.task, url, req_id: req.reqId }, 'posting task to cn-agent');
    this.inFlight++;
    try {
      const res = await this.http.request({
        method: 'POST',
        url,
        body: { task: req.task, params: req.params },
        headers: { 'x-server-uuid': req.serverUuid, 'x-request-id': req.reqId },
        timeoutMs: CN_AGENT_TIMEOUT_MS,
      });
      if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, body: res.body ?? {} };
      return { ok: false, message: failureMessage(res), statusCode: res.statusCode, body: res.body };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.warn({ err, server_uuid: req.serverUuid, task: req.task }, 'posting task to cn-agent failed');
      return { ok: false, message: message || 'no error given' };
    } finally {
      this.inFlight--;
    }
  }

  /** A non-task cn-agent route (GET /history, POST /pause, POST /resume). */
  async sendRequest(
    serverUuid: string,
    sysinfo: Sysinfo | undefined,
    method: 'GET' | 'POST',
    path: string,
  ): Promise<HttpResponse> {
    const addr = requestAddress(sysinfo);
    if (!addr) throw new Error('Parsing server ip address (No admin NICs detected.)');
    return this.http.request({
      method,
      url: `http://${hostPort(addr)}${path}`,
      headers: { 'x-server-uuid': serverUuid },
      body: method === 'POST' ? {} : undefined,
      timeoutMs: 60_000,
    });
  }
}

/**
 * The message CNAPI stores for a failed task: cn-agent's `error` string when its body has
 * one, else what restify's client would say (the restify error message, or the status).
 */
function failureMessage(res: HttpResponse): string {
  const b = res.body as { error?: unknown; message?: unknown } | string | undefined;
  if (b && typeof b === 'object') {
    if (typeof b.error === 'string' && b.error) return b.error;
    if (b.error && typeof b.error === 'object' && typeof (b.error as { message?: unknown }).message === 'string') {
      return (b.error as { message: string }).message;
    }
    if (typeof b.message === 'string' && b.message) return b.message;
  }
  if (typeof b === 'string' && b) return b;
  return `${res.statusCode} ${STATUS_CODES[res.statusCode] ?? 'Error'}`;
}
