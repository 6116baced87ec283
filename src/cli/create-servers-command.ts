/**
 * `mockcloud create-servers N`: create N mock CNs in the running daemon (found through
 * <data-dir>/daemon.json) via its control API, showing progress. Each CN gets an admin NIC from
 * NAPI, its server dir with sysinfo and agents, and starts at once.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CreateResult } from '../daemon/server-factory.js';
import { MAX_CREATE_COUNT } from '../daemon/server-factory.js';
import { clientDataDir, CliError, findDaemon } from './daemon-client.js';

interface CreateArgs {
  count: number;
  profile?: string;
  'hostname-prefix'?: string;
  'data-dir'?: string;
  json?: boolean;
}

function builder(y: Argv): Argv<CreateArgs> {
  return y
    .positional('count', { type: 'number', describe: `how many mock CNs to create (1-${MAX_CREATE_COUNT})`, demandOption: true })
    .option('profile', { type: 'string', describe: 'hardware profile: virtual (default; the original template), small, large' })
    .option('hostname-prefix', { type: 'string', describe: 'hostname prefix (default VC): <prefix><first 8 hex of uuid>' })
    .option('data-dir', { type: 'string', describe: 'the daemon\'s data dir (env MOCKCLOUD_DATA_DIR)' })
    .option('json', { type: 'boolean', describe: 'print the created servers as JSON' }) as Argv<CreateArgs>;
}

async function handler(argv: CreateArgs): Promise<void> {
  const count = argv.count;
  if (!Number.isInteger(count) || count < 1 || count > MAX_CREATE_COUNT) {
    throw new CliError(`N must be an integer from 1 to ${MAX_CREATE_COUNT}, not ${JSON.stringify(argv.count)}`);
  }
  const dataDir = clientDataDir(argv['data-dir']);
  const daemon = await findDaemon(dataDir);
  // Batches give progress and keep each request short; the daemon creates a batch in parallel.
  const batch = Math.min(500, Math.max(32, Math.ceil(count / 20)));
  const all: CreateResult = { created: [], errors: [] };
  const tty = process.stderr.isTTY;
  for (let done = 0; done < count; ) {
    const n = Math.min(batch, count - done);
    const body: Record<string, unknown> = { count: n };
    if (argv.profile !== undefined) body.profile = argv.profile;
    if (argv['hostname-prefix'] !== undefined) body.hostnamePrefix = argv['hostname-prefix'];
    const res = await daemon.request<CreateResult & { code?: string; message?: string }>('POST', '/servers', body);
    if (res.status >= 400 && res.status < 500) {
      // The request itself is wrong (bad profile, ...): every batch would fail alike.
      throw new CliError(res.body?.message ?? `the daemon refused: HTTP ${res.status}`);
    }
    if (Array.isArray(res.body?.created)) all.created.push(...res.body.created);
    if (Array.isArray(res.body?.errors)) all.errors.push(...res.body.errors);
    else if (res.status >= 300) all.errors.push({ code: res.body?.code ?? String(res.status), message: res.body?.message ?? `HTTP ${res.status}` });
    done += n;
    const line = `created ${all.created.length}/${count} servers${all.errors.length ? `, ${all.errors.length} failed` : ''}`;
    process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    if (all.created.length === 0 && all.errors.length >= n) break; // nothing works; stop early
  }
  if (tty) process.stderr.write('\n');

  if (argv.json) {
    process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
  } else {
    for (const s of all.created) {
      const addr = s.agentAddress ? `${s.agentAddress.ip}:${s.agentAddress.port}` : '-';
      process.stdout.write(`${s.uuid}  ${s.hostname}  admin ${s.adminIp || '-'}  cn-agent ${addr}\n`);
    }
  }
  if (all.errors.length > 0) {
    const kinds = new Map<string, number>();
    for (const e of all.errors) kinds.set(e.message, (kinds.get(e.message) ?? 0) + 1);
    for (const [message, n] of kinds) process.stderr.write(`mockcloud: ${n} server(s) failed: ${message}\n`);
    process.exitCode = 1;
  }
}

export const createServersCommand: CommandModule<object, CreateArgs> = {
  command: 'create-servers <count>',
  describe: 'Create N mock CNs in the running daemon (admin NIC from NAPI, server dir, started at once)',
  builder,
  handler,
};
