/**
 * `mockcloud mirror capture|load` (docs/mirror.md): capture a DC's servers, VMs, networks and
 * images through its APIs into one file, and load such a file into the running daemon and its
 * headnode. capture reads only; its addresses come from the flags, else MOCKCLOUD_*_URL, else
 * the running daemon of --data-dir (the same Triton the daemon talks to). load talks to the
 * daemon of --data-dir (its control API) and to the headnode it uses (daemon.json's URLs).
 * Ctrl-C stops either at the next page or record; a load run again finishes the job.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { resolveConfig, type DaemonConfig } from '../daemon/config.js';
import { readDaemonJson } from '../daemon/daemon-json.js';
import { noMdata, systemMdataReader } from '../daemon/mdata.js';
import type { CaptureUrls } from '../mirror/capture.js';
import { DEFAULT_CAPTURE_LIMITS, RECORD_KIND_NAMES, type RecordKind } from '../mirror/format.js';
import type { LoadReport } from '../mirror/load-report.js';
import { clientDataDir, CliError, daemonFor, daemonLine, UsageError } from './daemon-client.js';
import { Progress, jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface MirrorArgs extends DataDirArgs, JsonArgs {
  action: 'capture' | 'load';
  file?: string;
  output?: string;
  'cnapi-url'?: string;
  'vmapi-url'?: string;
  'napi-url'?: string;
  'imgapi-url'?: string;
  'papi-url'?: string;
  'vm-states'?: string;
  redact?: boolean;
  'redact-key-file'?: string;
  'admin-uuid'?: string;
  'remap-uuids'?: boolean;
  'remap-seed'?: string;
  'max-line-mib': number;
  'max-size-gib': number;
}

const SERVICES = ['cnapi', 'vmapi', 'napi', 'imgapi', 'papi'] as const;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** A flag's number: above 0 and at most `max`. */
function positive(flag: string, value: number, max: number): number {
  if (!Number.isFinite(value) || value <= 0 || value > max) throw new UsageError(`${flag} must be a number above 0 and at most ${max}`);
  return value;
}


function builder(y: Argv): Argv<MirrorArgs> {
  let out = y
    .positional('action', { choices: ['capture', 'load'] as const, demandOption: true, describe: 'capture a DC into a file, or load a file into the running daemon' })
    .positional('file', { type: 'string', describe: 'the capture file (load; capture: the same as --output)' })
    .option('output', { alias: 'o', type: 'string', describe: 'capture: the file to write (gzip JSON lines)' })
    .option('vm-states', { type: 'string', default: 'active', describe: 'capture: the VMAPI states of the VMs to capture, comma-separated (active = every VM not destroyed)' })
    .option('redact', { type: 'boolean', default: true, describe: 'capture: replace customer metadata, tag values, aliases, hostnames, owners and customer IPs (--no-redact keeps them; docs/mirror.md)' })
    .option('redact-key-file', { type: 'string', describe: 'capture: a file holding the redaction key: captures with the same key replace the same names and owners the same way (default: a new random key, never written)' })
    .option('admin-uuid', { type: 'string', describe: "capture: the DC's admin user, kept by redaction (default: the daemon's setting, e.g. mdata ufdsAdmin, else Triton's default)" })
    .option('remap-uuids', { type: 'boolean', default: false, describe: 'load: new UUIDs for servers and VMs (and new VM NIC MACs), derived from the captured ones and --remap-seed' })
    .option('remap-seed', { type: 'string', describe: 'load: what remapped UUIDs are derived with (default "mirror"): the same seed, the same UUIDs' })
    .option('max-line-mib', {
      type: 'number',
      default: DEFAULT_CAPTURE_LIMITS.maxLineBytes / MiB,
      describe: 'load: the longest line (one record) read, in MiB; a longer one is refused, naming its line, and nothing is loaded',
    })
    .option('max-size-gib', {
      type: 'number',
      default: DEFAULT_CAPTURE_LIMITS.maxBytes / GiB,
      describe: 'load: the most read of the file, decompressed, in GiB; past it the file is refused and nothing is loaded',
    });
  for (const svc of SERVICES) {
    out = out.option(`${svc}-url`, {
      type: 'string',
      describe:
        svc === 'papi'
          ? "PAPI URL (capture: packages are captured where given, or from the running daemon's dev headnode; load: packages are loaded there, by default into the daemon's dev headnode's PAPI)"
          : `capture: ${svc.toUpperCase()} URL (default: the daemon's setting: MOCKCLOUD_${svc.toUpperCase()}_URL, config file, mdata; else the running daemon's)`,
    });
  }
  return withJson(withDataDir(out), 'the summary')
    .example('$0 mirror capture -o dc.mirror.gz --cnapi-url http://cnapi.us-east-1.example.com ...', 'capture a DC (redacted)')
    .example('$0 mirror load dc.mirror.gz', 'bring it up as mock CNs in the running daemon and its dev headnode')
    .epilog('The file format and what redaction replaces and keeps: docs/mirror.md.') as unknown as Argv<MirrorArgs>;
}

/** Ctrl-C: stop at the next page or record (a second one ends the process). */
function interruptible(): { signal: AbortSignal; done(): void } {
  const ac = new AbortController();
  const onSigint = (): void => {
    if (ac.signal.aborted) process.exit(130);
    process.stderr.write('mockcloud: stopping at the next step (Ctrl-C again to end now)\n');
    ac.abort();
  };
  process.on('SIGINT', onSigint);
  return { signal: ac.signal, done: () => process.off('SIGINT', onSigint) };
}

/** One progress phase per kind of record. */
function progressByKind(verb: string): { update(kind: RecordKind, done: number, total?: number): void; stop(): void } {
  const progress = new Progress();
  let current: RecordKind | undefined;
  return {
    update(kind, done, total) {
      if (kind !== current) {
        current = kind;
        progress.start(verb, total ?? done, RECORD_KIND_NAMES[kind]);
      }
      progress.update(done, 0, total ?? done);
    },
    stop: () => progress.stop(),
  };
}

/**
 * What capture reads: the URL flags, else what the daemon's own configuration gives (its env,
 * config file and mdata, as `mockcloud daemon` resolves them: in a mockcloud0 zone the DC's own
 * APIs), else the URLs of the daemon running in --data-dir (its embedded dev headnode).
 */
async function captureUrls(argv: MirrorArgs): Promise<{ urls: CaptureUrls; adminUuid: string }> {
  const flags: Record<string, string> = {};
  if (argv['data-dir']) flags.dataDir = argv['data-dir'];
  for (const svc of ['cnapi', 'vmapi', 'napi', 'imgapi'] as const) {
    const v = argv[`${svc}-url`];
    if (v) flags[`${svc}Url`] = v;
  }
  if (argv['admin-uuid'] !== undefined) {
    if (!isUuid(argv['admin-uuid'])) throw new UsageError(`--admin-uuid ${JSON.stringify(argv['admin-uuid'])} is not a UUID`);
    flags.adminUuid = argv['admin-uuid'];
  }
  let config: DaemonConfig;
  try {
    config = await resolveConfig({ flags, env: process.env, mdata: process.env.MOCKCLOUD_NO_MDATA === '1' ? noMdata : systemMdataReader() });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  // A daemon is asked only for what the configuration lacks.
  const configured = (['cnapi', 'vmapi', 'napi'] as const).every((svc) => config.urls[svc]);
  const daemon = configured ? undefined : await readDaemonJson(clientDataDir(argv['data-dir']));
  if (daemon) process.stderr.write(`${daemonLine(daemon)}: capturing the Triton it reports to\n`);
  const urls: Record<string, string> = {};
  for (const svc of ['cnapi', 'vmapi', 'napi', 'imgapi'] as const) {
    const v = config.urls[svc] ?? daemon?.urls[svc];
    if (v) urls[svc] = v.replace(/\/+$/, '');
  }
  const papi = argv['papi-url'] || process.env.MOCKCLOUD_PAPI_URL || daemon?.urls.papi;
  if (papi) urls.papi = papi.replace(/\/+$/, '');
  const missing = (['cnapi', 'vmapi', 'napi'] as const).filter((s) => !urls[s]);
  if (missing.length > 0) {
    throw new UsageError(`capture needs ${missing.map((s) => `--${s}-url`).join(', ')} (or the daemon's configuration of them, or a running daemon in --data-dir)`);
  }
  return { urls: urls as unknown as CaptureUrls, adminUuid: config.adminUuid };
}

async function runCapture(argv: MirrorArgs): Promise<void> {
  const output = argv.output ?? argv.file;
  if (!output) throw new UsageError('capture needs --output FILE');
  if (argv.output !== undefined && argv.file !== undefined) throw new UsageError('capture writes one file: give --output FILE or FILE, not both');
  const states = String(argv['vm-states']).split(',').map((s) => s.trim()).filter(Boolean);
  if (states.length === 0) throw new UsageError('--vm-states names no state');
  if (states.includes('active') && states.some((s) => s === 'running' || s === 'stopped')) {
    throw new UsageError('--vm-states: active already holds running and stopped VMs');
  }
  let redactKey: string | undefined;
  if (argv['redact-key-file'] !== undefined) {
    if (argv.redact === false) throw new UsageError('--redact-key-file goes with redaction, not --no-redact');
    redactKey = (await fsp.readFile(argv['redact-key-file'], 'utf8').catch((err: Error) => {
      throw new UsageError(`cannot read --redact-key-file: ${err.message}`);
    })).trim();
    if (redactKey.length < 16) throw new UsageError('the redaction key must be at least 16 characters');
  }
  const { urls, adminUuid } = await captureUrls(argv);
  const stop = interruptible();
  const progress = progressByKind('captured');
  try {
    // Loaded here, not at the top: the other commands start without the mirror's modules.
    const { capture } = await import('../mirror/capture.js');
    const header = await capture({
      urls,
      output: path.resolve(output),
      vmStates: [...new Set(states)],
      redact: argv.redact !== false,
      ...(redactKey !== undefined ? { redactKey } : {}),
      adminUuid,
      signal: stop.signal,
      onProgress: (p) => progress.update(p.kind, p.done, p.total),
    });
    progress.stop();
    if (argv.json) process.stdout.write(jsonLine(header));
    else {
      const c = header.counts;
      process.stdout.write(
        `${output}: ${c.server} servers, ${c.vm} VMs, ${c.network} networks, ${c.network_pool} pools, ${c.nic_tag} NIC tags, ` +
          `${c.nic} NICs, ${c.image} images, ${c.package} packages${header.redacted ? ' (redacted)' : ' (NOT redacted)'} in ${(header.durationMs / 1000).toFixed(1)} s\n`,
      );
      for (const s of header.skipped) process.stdout.write(`  not captured: ${s}\n`);
    }
  } finally {
    progress.stop();
    stop.done();
  }
}

async function runLoad(argv: MirrorArgs): Promise<void> {
  if (!argv.file) throw new UsageError('load needs the capture file: mockcloud mirror load FILE');
  const limits = {
    maxLineBytes: Math.floor(positive('--max-line-mib', argv['max-line-mib'], 4096) * MiB),
    maxBytes: Math.floor(positive('--max-size-gib', argv['max-size-gib'], 1024) * GiB),
  };
  const daemon = await daemonFor(argv);
  const urls = daemon.info.urls;
  if (!urls.napi) throw new CliError('the daemon has no NAPI (standalone): a capture loads into a daemon with a headnode (--headnode, or Triton URLs)');
  const [{ JsonHttpClient }, { load }] = await Promise.all([import('../common/http-client.js'), import('../mirror/load.js')]);
  const http = new JsonHttpClient({ maxSockets: 64, timeoutMs: 60_000, userAgent: 'mockcloud-mirror' });
  const stop = interruptible();
  const progress = progressByKind('loaded');
  let report: LoadReport;
  try {
    report = await load({
      file: path.resolve(argv.file),
      control: daemon,
      http,
      urls: {
        napi: urls.napi,
        ...(urls.cnapi ? { cnapi: urls.cnapi } : {}),
        ...(urls.vmapi ? { vmapi: urls.vmapi } : {}),
        ...(urls.imgapi ? { imgapi: urls.imgapi } : {}),
        ...(argv['papi-url'] ? { papi: argv['papi-url'].replace(/\/+$/, '') } : urls.papi ? { papi: urls.papi } : {}),
      },
      ...(argv['remap-uuids'] ? { remapUuids: true } : {}),
      ...(argv['remap-seed'] !== undefined ? { remapSeed: argv['remap-seed'] } : {}),
      signal: stop.signal,
      onProgress: (p) => progress.update(p.kind, p.done, p.total),
      limits,
    });
  } finally {
    progress.stop();
    stop.done();
    http.agent.destroy();
  }
  if (argv.json) process.stdout.write(jsonLine(report));
  else printReport(report);
  const failed = Object.values(report.counts).reduce((n, c) => n + c.failed, 0);
  if (failed > 0) {
    for (const e of report.errors) process.stderr.write(`mockcloud: ${e.kind} ${e.id}: ${e.message}\n`);
    // Failures are what the DC or the daemon could not do then (a 5xx, a timeout, a lost
    // connection); what the loading DC refused (a 4xx) is under "not reproduced" and is not retried.
    throw new CliError(
      `${failed} record(s) could not be loaded (see above): the loading DC or the daemon failed on them; ` +
        'run the load again to retry them; what the loading DC refused (under "not reproduced as captured") a second run cannot change',
    );
  }
}

function printReport(r: LoadReport): void {
  for (const [kind, c] of Object.entries(r.counts)) {
    const total = c.created + c.existing + c.failed + c.skipped;
    if (total === 0) continue;
    process.stdout.write(`${kind.padEnd(13)} ${c.created} created, ${c.existing} already there, ${c.skipped} skipped, ${c.failed} failed\n`);
  }
  if (r.notReproduced.length > 0) {
    process.stdout.write('not reproduced as captured:\n');
    for (const n of r.notReproduced) {
      process.stdout.write(`  ${n.what}: ${n.count}${n.examples.length ? ` (e.g. ${n.examples.join('; ')})` : ''}\n`);
    }
  }
  process.stdout.write(`loaded in ${(r.durationMs / 1000).toFixed(1)} s\n`);
}

async function handler(argv: MirrorArgs): Promise<void> {
  if (argv.action === 'capture') return runCapture(argv);
  return runLoad(argv);
}

export const mirrorCommand: CommandModule<object, MirrorArgs> = {
  command: 'mirror <action> [file]',
  describe: "Mirror a DC: capture its servers, VMs, networks and images into a file (read-only, redacted), or load one into the running daemon as mock CNs",
  builder,
  handler,
};
