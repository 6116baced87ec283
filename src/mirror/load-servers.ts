/**
 * `mirror load`'s server phase: each captured CN through the daemon's control API (POST
 * /servers {count: 1, uuid, hostname, hardware}), unless the daemon has the uuid. The daemon
 * stages the CN's dir and publishes it whole (src/mockcn/server-dir.ts): never half a CN. The
 * DC's headnode server is not loaded (the loading DC has its own).
 */
import { MockcloudError } from '../common/errors.js';
import type { Obj } from './format.js';
import { hardwareOf } from './hardware.js';
import type { Outcome } from './load-report.js';
import { Refused, sleep, type LoadRun } from './load-run.js';

export async function loadServer(run: LoadRun, s: Obj): Promise<Outcome> {
  const captured = String(s.uuid);
  const si = (s.sysinfo ?? {}) as Obj;
  if (si['Headnode ID'] !== undefined) {
    run.note("the DC's headnode server (the loading DC has its own; VMs on it are not loaded)", captured);
    return 'skipped';
  }
  const uuid = run.remap('server', captured);
  const have = await run.o.control.request<Obj>('GET', `/servers/${uuid}`);
  if (have.status === 200) {
    run.servers.set(captured, { uuid, agentUrl: agentUrlOf(have.body) });
    return 'existing';
  }
  const { hardware, lost } = hardwareOf(s);
  for (const l of lost) run.note(`server hardware: ${l}`, captured);
  const body: Obj = { count: 1, uuid, hardware };
  const hostname = typeof s.hostname === 'string' ? s.hostname : si.Hostname;
  if (typeof hostname === 'string' && /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(hostname)) body.hostname = hostname;
  else run.note('server hostnames that are no valid nodename (a drawn one instead)', String(hostname));
  const deadline = Date.now() + (run.o.registerTimeoutMs ?? 60_000);
  for (;;) {
    const res = await run.o.control.request<Obj>('POST', '/servers', body);
    const created = (res.body?.created as Obj[] | undefined)?.[0];
    if (res.status === 200 && created) {
      run.servers.set(captured, { uuid, agentUrl: agentUrlOf(created) });
      return 'created';
    }
    // Being created by an earlier load the daemon is still finishing: wait for it.
    if (res.status === 409 && /already (exists|being created)/.test(String(res.body?.message)) && Date.now() < deadline) {
      await sleep(250);
      const again = await run.o.control.request<Obj>('GET', `/servers/${uuid}`);
      if (again.status === 200) {
        run.servers.set(captured, { uuid, agentUrl: agentUrlOf(again.body) });
        return 'existing';
      }
      continue;
    }
    const b = res.body as { code?: string; message?: string } | undefined;
    const message = `the daemon could not create server ${uuid}: ${b?.message ?? `HTTP ${res.status}`}`;
    if (res.status >= 400 && res.status < 500) throw new Refused(message);
    throw new MockcloudError('BadGateway', message);
  }
}

export function agentUrlOf(server: Obj): string {
  const a = server.agentAddress as { ip?: string; port?: number } | null | undefined;
  if (!a?.ip || !a.port) throw new MockcloudError('BadGateway', `the daemon gives no agent address for server ${String(server.uuid)}`);
  return `http://${a.ip}:${a.port}`;
}
