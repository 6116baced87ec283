/**
 * Tasks sent the way CNAPI sends them: `POST http://<CN Agent IP>:<CN Agent Port>/tasks` with
 * `x-server-uuid` and `x-request-id`, body `{task, params}`, held open until the task ends
 * (cn-agent-spec §2.3, §2.8). Spread round-robin over the CNs with bounded concurrency, and
 * bounded in count and time; each completed request's latency is recorded.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';

export interface TaskTarget {
  uuid: string;
  ip: string;
  port: number;
}

export interface TaskOutcome {
  status: number;
  ms: number;
  body: unknown;
}

export interface TaskRunResult {
  /** Latencies (ms) of the tasks that succeeded (HTTP 200). */
  latenciesMs: number[];
  ok: number;
  failed: number;
  /** A few failure descriptions, for the report. */
  failures: string[];
  /** Wall time of the whole run, s. */
  seconds: number;
  /** True when the time bound stopped the run early. */
  timedOut: boolean;
}

const TASK_TIMEOUT_MS = 60_000;

/** One keep-alive agent for the harness, as CNAPI reuses its connections. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** The burst's own agent: every task on a connection of its own, all at once. */
const burstAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

export function closeTaskAgent(): void {
  agent.destroy();
  burstAgent.destroy();
}

/**
 * A kept-alive connection the daemon closes as idle (after 5 s, like any Node server) can race
 * a request sent on it; the reset comes before the daemon read a byte, so the task never ran and
 * is sent again once, on a new connection (Node's documented `reusedSocket` pattern, as the
 * daemon's own client does). Any other failure is the task's.
 */
export async function postTask(
  target: TaskTarget,
  task: string,
  params: Record<string, unknown>,
  via: http.Agent = agent,
  timeoutMs = TASK_TIMEOUT_MS,
): Promise<TaskOutcome> {
  const payload = Buffer.from(JSON.stringify({ task, params }));
  try {
    return await postOnce(target, task, payload, via, timeoutMs);
  } catch (err) {
    if (!(err as { staleSocket?: boolean }).staleSocket) throw err;
    return postOnce(target, task, payload, false, timeoutMs);
  }
}

function postOnce(target: TaskTarget, task: string, payload: Buffer, via: http.Agent | false, timeoutMs: number): Promise<TaskOutcome> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.ip,
        port: target.port,
        method: 'POST',
        path: '/tasks',
        agent: via,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          accept: 'application/json',
          'x-server-uuid': target.uuid,
          'x-request-id': randomUUID(),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const ms = performance.now() - started;
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // keep the text
          }
          resolve({ status: res.statusCode ?? 0, ms, body });
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`task ${task} timed out after ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      const reset = err.code === 'ECONNRESET' || err.code === 'EPIPE';
      reject(reset && req.reusedSocket ? Object.assign(err, { staleSocket: true }) : err);
    });
    req.end(payload);
  });
}

export interface TaskRunOptions {
  targets: readonly TaskTarget[];
  task: string;
  /** Params of the i-th task, sent to `target`. */
  params: (i: number, target: TaskTarget) => Record<string, unknown>;
  count: number;
  concurrency: number;
  /** Stop starting new tasks after this long. */
  timeBudgetMs: number;
  /** Called after each successful task. */
  onOk?: (i: number, target: TaskTarget, outcome: TaskOutcome) => void;
  /** Index of the first task (round-robin position). */
  startAt?: number;
  /** How long one task may take before the harness gives up on it (default 60 s). */
  requestTimeoutMs?: number;
  /** Each task on a connection of its own, closed after (as the burst's): no idle keep-alive sockets pile up. */
  ownConnections?: boolean;
}

export async function runTasks(opts: TaskRunOptions): Promise<TaskRunResult> {
  const result: TaskRunResult = { latenciesMs: [], ok: 0, failed: 0, failures: [], seconds: 0, timedOut: false };
  if (opts.targets.length === 0 || opts.count <= 0) return result;
  const started = performance.now();
  const deadline = started + opts.timeBudgetMs;
  const first = opts.startAt ?? 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < opts.count) {
      if (performance.now() >= deadline) {
        result.timedOut = true;
        return;
      }
      const i = next++;
      const target = opts.targets[(first + i) % opts.targets.length]!;
      try {
        const outcome = await postTask(target, opts.task, opts.params(first + i, target), opts.ownConnections ? burstAgent : agent, opts.requestTimeoutMs);
        if (outcome.status === 200) {
          result.ok++;
          result.latenciesMs.push(outcome.ms);
          opts.onOk?.(first + i, target, outcome);
        } else {
          noteFailure(result, `${opts.task} on ${target.uuid}: HTTP ${outcome.status} ${short(outcome.body)}`);
        }
      } catch (err) {
        noteFailure(result, `${opts.task} on ${target.uuid}: ${(err as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, opts.count)) }, worker));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

export interface BurstResult {
  answered: number;
  refused: number;
  failed: number;
  failures: string[];
  /** Latencies (ms) of the answered tasks. */
  latenciesMs: number[];
  seconds: number;
}

/** `count` tasks sent at once, round-robin over the targets, each on its own connection. */
export async function runBurst(targets: readonly TaskTarget[], count: number, task: string): Promise<BurstResult> {
  const out: BurstResult = { answered: 0, refused: 0, failed: 0, failures: [], latenciesMs: [], seconds: 0 };
  if (targets.length === 0 || count <= 0) return out;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const target = targets[i % targets.length]!;
      try {
        const r = await postTask(target, task, {}, burstAgent);
        if (r.status === 200) {
          out.answered++;
          out.latenciesMs.push(r.ms);
        } else if (r.status === 503) {
          out.refused++;
        } else {
          out.failed++;
          if (out.failures.length < 5) out.failures.push(`${task} on ${target.uuid}: HTTP ${r.status} ${short(r.body)}`);
        }
      } catch (err) {
        out.failed++;
        if (out.failures.length < 5) out.failures.push(`${task} on ${target.uuid}: ${(err as Error).message}`);
      }
    }),
  );
  out.seconds = (performance.now() - started) / 1000;
  return out;
}

function noteFailure(result: TaskRunResult, what: string): void {
  result.failed++;
  if (result.failures.length < 5) result.failures.push(what);
}

function short(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text === undefined ? '' : text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
