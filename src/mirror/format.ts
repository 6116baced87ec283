/**
 * The capture file (docs/mirror.md): gzip'd JSON lines. Line 1 is the header (format name and
 * version, where and when it was captured, whether it is redacted, how many records of each
 * kind follow); then one record a line, by kind in load order (nic_tag, network,
 * network_pool, image, package, server, vm, nic); the last line is `{"kind":"end"}`, so a
 * file cut short is told from a whole one.
 *
 * Written without holding the records: the records go to `<file>.body.tmp` as they come
 * (gzip), then the header — whose counts are known only at the end — is written as a gzip
 * member of its own and the body's bytes are copied after it (concatenated gzip members are
 * one stream to gunzip, RFC 1952 §2.2), to `<file>.tmp`, renamed over `<file>` at the end.
 */
import { createReadStream, createWriteStream, promises as fsp, type WriteStream } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { fsyncDir } from '../common/durable-file.js';
import { MockcloudError } from '../common/errors.js';

export const CAPTURE_FORMAT = 'mockcloud-mirror';
export const CAPTURE_VERSION = 1;

/** The kinds of record, in the order a capture holds them and a load applies them. */
export const RECORD_KINDS = ['nic_tag', 'network', 'network_pool', 'image', 'package', 'server', 'vm', 'nic'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** What a kind of record is called in progress lines and reports. */
export const RECORD_KIND_NAMES: Record<RecordKind, string> = {
  nic_tag: 'NIC tags',
  network: 'networks',
  network_pool: 'network pools',
  image: 'images',
  package: 'packages',
  server: 'servers',
  vm: 'VMs',
  nic: 'NICs',
};

export type Obj = Record<string, unknown>;

export interface CaptureHeader {
  kind: 'header';
  format: typeof CAPTURE_FORMAT;
  version: number;
  /** The APIs read (URLs), and the DC's name when CNAPI's servers say it. */
  source: { cnapi: string; vmapi: string; napi: string; imgapi?: string; papi?: string; datacenter?: string };
  capturedAt: string;
  /** ms the capture took. */
  durationMs: number;
  redacted: boolean;
  /** The VMAPI states asked for. */
  vmStates: string[];
  /** The DC's admin user (not mapped by redaction). */
  adminUuid: string;
  counts: Record<RecordKind, number>;
  /** What could not be read (PAPI unreachable, an API without a list), in words. */
  skipped: string[];
}

export interface CaptureRecord {
  kind: RecordKind;
  data: Obj;
}

export function emptyCounts(): Record<RecordKind, number> {
  return Object.fromEntries(RECORD_KINDS.map((k) => [k, 0])) as Record<RecordKind, number>;
}

/** Streams records to a capture file; `finish` writes the header and puts the file in place. */
export class CaptureWriter {
  private readonly gzip = zlib.createGzip();
  private readonly out: WriteStream;
  private readonly done: Promise<void>;
  readonly counts = emptyCounts();
  private order = 0;

  constructor(readonly file: string) {
    this.out = createWriteStream(`${file}.body.tmp`);
    this.done = pipeline(this.gzip, this.out);
    // A write failure surfaces at finish (or abort); keep it from being unhandled meanwhile.
    this.done.catch(() => undefined);
  }

  /** One record; waits when gzip is behind (so the reader of pages is held back too). */
  async write(kind: RecordKind, data: Obj): Promise<void> {
    const index = RECORD_KINDS.indexOf(kind);
    if (index < this.order) throw new Error(`capture records out of order: ${kind} after ${RECORD_KINDS[this.order]}`);
    this.order = index;
    this.counts[kind]++;
    if (!this.gzip.write(`${JSON.stringify({ kind, data })}\n`)) {
      await new Promise<void>((resolve) => this.gzip.once('drain', resolve));
    }
  }

  async finish(header: Omit<CaptureHeader, 'kind' | 'format' | 'version' | 'counts'>): Promise<CaptureHeader> {
    this.gzip.end(`${JSON.stringify({ kind: 'end' })}\n`);
    await this.done;
    const full: CaptureHeader = { kind: 'header', format: CAPTURE_FORMAT, version: CAPTURE_VERSION, ...header, counts: { ...this.counts } };
    const tmp = `${this.file}.tmp`;
    const head = zlib.gzipSync(`${JSON.stringify(full)}\n`);
    const fh = await fsp.open(tmp, 'w');
    try {
      await fh.write(head);
      const body = await fsp.open(`${this.file}.body.tmp`, 'r');
      try {
        const buf = Buffer.allocUnsafe(1 << 20);
        for (;;) {
          const { bytesRead } = await body.read(buf, 0, buf.length, null);
          if (bytesRead === 0) break;
          await fh.write(buf.subarray(0, bytesRead));
        }
      } finally {
        await body.close();
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, this.file);
    await fsyncDir(path.dirname(this.file));
    await fsp.rm(`${this.file}.body.tmp`, { force: true });
    return full;
  }

  /** Give up: no file is left (an earlier capture at the path stays as it was). */
  async abort(): Promise<void> {
    this.gzip.destroy();
    await this.done.catch(() => undefined);
    await Promise.all([fsp.rm(`${this.file}.body.tmp`, { force: true }), fsp.rm(`${this.file}.tmp`, { force: true })]);
  }
}

/** The header of a capture file (reads only the first line). */
export async function readCaptureHeader(file: string): Promise<CaptureHeader> {
  for await (const item of readCapture(file, { headerOnly: true })) {
    if (item.kind === 'header') return item;
  }
  throw badCapture(file, 'it is empty');
}

/**
 * The header, then every record, streamed (one line in memory at a time); a file that is not a
 * capture, of another version, or cut short (no end line) fails with what is wrong.
 */
export async function* readCapture(file: string, opts: { headerOnly?: boolean } = {}): AsyncGenerator<CaptureHeader | CaptureRecord> {
  const stream = createReadStream(file);
  const gunzip = zlib.createGunzip();
  // The file's own error reaches the lines through gunzip; readline passes gunzip's on.
  stream.on('error', (err) => gunzip.destroy(badCapture(file, err.message)));
  const lines = readline.createInterface({ input: stream.pipe(gunzip), crlfDelay: Infinity });
  let lineNo = 0;
  let ended = false;
  try {
    for await (const line of lines) {
      lineNo++;
      if (line === '') continue;
      let value: Obj;
      try {
        value = JSON.parse(line) as Obj;
      } catch {
        throw badCapture(file, `line ${lineNo} is not JSON`);
      }
      if (lineNo === 1) {
        if (value.kind !== 'header' || value.format !== CAPTURE_FORMAT) throw badCapture(file, 'its first line is not a mockcloud mirror header');
        if (value.version !== CAPTURE_VERSION) throw badCapture(file, `it is format version ${String(value.version)}; this mockcloud reads version ${CAPTURE_VERSION}`);
        yield value as unknown as CaptureHeader;
        if (opts.headerOnly) return;
        continue;
      }
      if (value.kind === 'end') {
        ended = true;
        continue;
      }
      if (!(RECORD_KINDS as readonly string[]).includes(String(value.kind)) || typeof value.data !== 'object' || value.data === null) {
        throw badCapture(file, `line ${lineNo} is no record (kind ${JSON.stringify(value.kind)})`);
      }
      yield value as unknown as CaptureRecord;
    }
    if (lineNo === 0) throw badCapture(file, 'it is empty');
    if (!ended) throw badCapture(file, 'it is cut short (no end line)');
  } catch (err) {
    throw err instanceof MockcloudError ? err : badCapture(file, `not gzip or cut short (${(err as Error).message})`);
  } finally {
    lines.close();
    stream.destroy();
  }
}

/**
 * Read the whole file once, holding nothing: whole (its end line), and holding the records its
 * header counts. A load checks this before it changes anything.
 */
export async function verifyCapture(file: string): Promise<CaptureHeader> {
  let header: CaptureHeader | undefined;
  const seen = emptyCounts();
  for await (const item of readCapture(file)) {
    if (item.kind === 'header') header = item;
    else seen[item.kind]++;
  }
  if (!header) throw badCapture(file, 'it has no header');
  const wrong = RECORD_KINDS.filter((k) => (header!.counts?.[k] ?? 0) !== seen[k]);
  if (wrong.length > 0) {
    throw badCapture(file, `its header counts ${wrong.map((k) => `${header!.counts?.[k] ?? 0} ${k}`).join(', ')}, it holds ${wrong.map((k) => seen[k]).join(', ')}`);
  }
  return header;
}

function badCapture(file: string, why: string): MockcloudError {
  return new MockcloudError('InvalidArgument', `${file} is not a usable capture: ${why}`);
}
