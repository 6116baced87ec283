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
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { fsyncDir } from '../common/durable-file.js';
import { formatBytes } from '../common/bounded-file.js';
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

/**
 * How much of a capture is read at most, decompressed. A capture's lines are JSON objects of a
 * DC's APIs (a server with its sysinfo, a VM: kilobytes); a file past these bounds is no capture
 * (a gzip bomb expands 2 MB into one 2 GiB line), and reading stops as soon as it passes one.
 */
export interface CaptureLimits {
  /** One line, in bytes (default 8 MiB; `mirror load --max-line-mib`). */
  maxLineBytes: number;
  /** The whole file, decompressed, in bytes (default 16 GiB; `mirror load --max-size-gib`). */
  maxBytes: number;
}

export const DEFAULT_CAPTURE_LIMITS: Readonly<CaptureLimits> = Object.freeze({
  maxLineBytes: 8 * 1024 * 1024,
  maxBytes: 16 * 1024 * 1024 * 1024,
});

/** The header of a capture file (reads only the first line). */
export async function readCaptureHeader(file: string, limits: Partial<CaptureLimits> = {}): Promise<CaptureHeader> {
  for await (const item of readCapture(file, { headerOnly: true, ...limits })) {
    if (item.kind === 'header') return item;
  }
  throw badCapture(file, 'it is empty');
}

/**
 * The header, then every record, streamed (one line in memory at a time); a file that is not a
 * capture, of another version, cut short (no end line), with more records of a kind than its
 * header counts, or past the limits fails with what is wrong, naming the line.
 */
export async function* readCapture(
  file: string,
  opts: { headerOnly?: boolean } & Partial<CaptureLimits> = {},
): AsyncGenerator<CaptureHeader | CaptureRecord> {
  const limits: CaptureLimits = {
    maxLineBytes: opts.maxLineBytes ?? DEFAULT_CAPTURE_LIMITS.maxLineBytes,
    maxBytes: opts.maxBytes ?? DEFAULT_CAPTURE_LIMITS.maxBytes,
  };
  const stream = createReadStream(file);
  const gunzip = zlib.createGunzip();
  // The file's own error reaches the lines through gunzip.
  stream.on('error', (err) => gunzip.destroy(badCapture(file, err.message)));
  stream.pipe(gunzip);
  let lineNo = 0;
  let ended = false;
  let header: CaptureHeader | undefined;
  const seen = emptyCounts();
  try {
    for await (const line of boundedLines(gunzip, limits, file)) {
      lineNo++;
      if (ended) throw badCapture(file, `line ${lineNo} follows the end line`);
      if (line === '') throw badCapture(file, `line ${lineNo} is empty (a capture has no blank lines)`);
      let value: Obj;
      try {
        value = JSON.parse(line) as Obj;
      } catch {
        throw badCapture(file, `line ${lineNo} is not JSON`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badCapture(file, `line ${lineNo} is not a JSON object`);
      if (lineNo === 1) {
        header = checkHeader(file, value);
        yield header;
        if (opts.headerOnly) return;
        continue;
      }
      if (value.kind === 'end') {
        ended = true;
        continue;
      }
      const kind = checkRecord(file, lineNo, value);
      if (++seen[kind] > (header!.counts?.[kind] ?? 0)) {
        throw badCapture(file, `line ${lineNo} is ${kind} record ${seen[kind]}, but the header counts ${header!.counts?.[kind] ?? 0}`);
      }
      yield value as unknown as CaptureRecord;
    }
    if (lineNo === 0) throw badCapture(file, 'it is empty');
    if (!ended) throw badCapture(file, 'it is cut short (no end line)');
  } catch (err) {
    throw err instanceof MockcloudError ? err : badCapture(file, `not gzip or cut short (${(err as Error).message})`);
  } finally {
    gunzip.destroy();
    stream.destroy();
  }
}

/** Line 1: the header of this format and version, with its counts. */
function checkHeader(file: string, value: Obj): CaptureHeader {
  if (value.kind !== 'header' || value.format !== CAPTURE_FORMAT) throw badCapture(file, 'its first line is not a mockcloud mirror header');
  if (value.version !== CAPTURE_VERSION) {
    const v = value.version;
    throw badCapture(
      file,
      typeof v === 'number'
        ? `it is format version ${v}; this mockcloud reads version ${CAPTURE_VERSION}`
        : `its header's "version" is ${JSON.stringify(v)} (${v === null ? 'null' : typeof v}); a capture's version is the number ${CAPTURE_VERSION}`,
    );
  }
  const counts = value.counts as Obj | undefined;
  if (typeof counts !== 'object' || counts === null || RECORD_KINDS.some((k) => !Number.isSafeInteger(counts[k]) || (counts[k] as number) < 0)) {
    throw badCapture(file, `its header's "counts" must give a whole number for each of ${RECORD_KINDS.join(', ')}`);
  }
  return value as unknown as CaptureHeader;
}

/** A record line: a known kind and an object of data; what is wrong otherwise, by line. */
function checkRecord(file: string, lineNo: number, value: Obj): RecordKind {
  const kind = value.kind;
  if (typeof kind !== 'string' || !(RECORD_KINDS as readonly string[]).includes(kind)) {
    throw badCapture(file, `line ${lineNo} has kind ${JSON.stringify(kind)}; a record's kind is one of ${RECORD_KINDS.join(', ')}`);
  }
  const data = value.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    const what = data === undefined ? 'no "data"' : `"data" ${Array.isArray(data) ? 'an array' : data === null ? 'null' : `a ${typeof data}`}`;
    throw badCapture(file, `line ${lineNo} is a ${kind} record with ${what}; its data must be a JSON object`);
  }
  return kind as RecordKind;
}

/**
 * The lines of a stream, each at most `maxLineBytes`, at most `maxBytes` in all: past either
 * the reading stops at once (the caller's loop ends and the stream is destroyed), without the
 * line ever being held whole.
 */
async function* boundedLines(source: AsyncIterable<Buffer>, limits: CaptureLimits, file: string): AsyncGenerator<string> {
  let parts: Buffer[] = [];
  let partLength = 0;
  let total = 0;
  let lineNo = 0;
  const tooLong = (): MockcloudError =>
    badCapture(
      file,
      `line ${lineNo + 1} is over ${formatBytes(limits.maxLineBytes)} (no record of a DC is that large); ` +
        'if the file is right, load it with a larger --max-line-mib',
    );
  for await (const chunk of source) {
    total += chunk.length;
    if (total > limits.maxBytes) {
      throw badCapture(file, `it is over ${formatBytes(limits.maxBytes)} decompressed (line ${lineNo + 1}); if the file is right, load it with a larger --max-size-gib`);
    }
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        if (start < chunk.length) {
          partLength += chunk.length - start;
          if (partLength > limits.maxLineBytes) throw tooLong();
          parts.push(chunk.subarray(start));
        }
        break;
      }
      if (partLength + (nl - start) > limits.maxLineBytes) throw tooLong();
      const piece = chunk.subarray(start, nl);
      const line = partLength > 0 ? Buffer.concat([...parts, piece]).toString('utf8') : piece.toString('utf8');
      parts = [];
      partLength = 0;
      lineNo++;
      yield line;
      start = nl + 1;
    }
  }
  if (partLength > 0) yield Buffer.concat(parts).toString('utf8');
}

/**
 * Read the whole file once, holding nothing: whole (its end line), and holding the records its
 * header counts. A load checks this before it changes anything.
 */
export async function verifyCapture(file: string, limits: Partial<CaptureLimits> = {}): Promise<CaptureHeader> {
  let header: CaptureHeader | undefined;
  const seen = emptyCounts();
  for await (const item of readCapture(file, limits)) {
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

/** A capture the load cannot use: the file must change, a load run again would meet the same. */
function badCapture(file: string, why: string): MockcloudError {
  return new MockcloudError('InvalidArgument', `${file} is not a usable capture: ${why}`);
}
