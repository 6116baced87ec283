/**
 * node-fast's wire format (TritonDataCenter/node-fast lib/fast_protocol.js), the transport of
 * FWAPI's update stream to the firewallers (node-fast-messages). A message is a 15-byte
 * header, then JSON:
 *
 *   version (1 byte) | type (1: JSON) | status (1 DATA, 2 END, 3 ERROR) | msgid (uint32 BE)
 *   | crc16 of the JSON text (uint32 BE) | length of the JSON (uint32 BE) | JSON
 *
 * The JSON is `{m: {uts, name}, d}`: `name` is the RPC method, `uts` a time in microseconds,
 * `d` the arguments (a request), the values (DATA, END) or `{name, message}` (ERROR). Version
 * 2 is spoken: its CRC is the `crc` package's crc16 (version 1 used the buggy node-crc 0.3,
 * which npm does not carry); a peer answers in the version it was asked in.
 */
import { createRequire } from 'node:module';

const crc = createRequire(import.meta.url)('crc') as { crc16(data: string | Buffer): number };

export const FP_VERSION = 2;
export const FP_TYPE_JSON = 1;
export const FP_STATUS_DATA = 1;
export const FP_STATUS_END = 2;
export const FP_STATUS_ERROR = 3;
export const FP_HEADER_SZ = 15;
export const FP_MSGID_MAX = 2 ** 31 - 1;
/** A frame larger than this is a broken peer, not a message. */
const MAX_DATA = 64 * 1024 * 1024;

export interface FastMessage {
  status: number;
  msgid: number;
  data: { m: { uts: number; name: string }; d: unknown };
}

export function encodeFast(msg: FastMessage): Buffer {
  const text = JSON.stringify(msg.data);
  const len = Buffer.byteLength(text);
  const buf = Buffer.alloc(FP_HEADER_SZ + len);
  buf.writeUInt8(FP_VERSION, 0);
  buf.writeUInt8(FP_TYPE_JSON, 1);
  buf.writeUInt8(msg.status, 2);
  buf.writeUInt32BE(msg.msgid, 3);
  buf.writeUInt32BE(crc.crc16(text), 7);
  buf.writeUInt32BE(len, 11);
  buf.write(text, FP_HEADER_SZ, len, 'utf8');
  return buf;
}

export function fastData(name: string, d: unknown): FastMessage['data'] {
  return { m: { uts: Math.round(performance.timeOrigin * 1000 + performance.now() * 1000), name }, d };
}

/** Splits a byte stream into messages; throws on a frame that is not node-fast's. */
export class FastDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): FastMessage[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: FastMessage[] = [];
    while (this.buf.length >= FP_HEADER_SZ) {
      const version = this.buf.readUInt8(0);
      const type = this.buf.readUInt8(1);
      const status = this.buf.readUInt8(2);
      const msgid = this.buf.readUInt32BE(3);
      const sum = this.buf.readUInt32BE(7);
      const len = this.buf.readUInt32BE(11);
      if (version !== FP_VERSION) throw new Error(`fast protocol: unsupported version ${version}`);
      if (type !== FP_TYPE_JSON) throw new Error(`fast protocol: unsupported type ${type}`);
      if (status < FP_STATUS_DATA || status > FP_STATUS_ERROR) throw new Error(`fast protocol: unsupported status ${status}`);
      if (len > MAX_DATA) throw new Error(`fast protocol: message of ${len} bytes`);
      if (this.buf.length < FP_HEADER_SZ + len) break;
      const text = this.buf.toString('utf8', FP_HEADER_SZ, FP_HEADER_SZ + len);
      this.buf = this.buf.subarray(FP_HEADER_SZ + len);
      if (crc.crc16(text) !== sum) throw new Error(`fast protocol: expected CRC ${sum}, found ${crc.crc16(text)}`);
      const data = JSON.parse(text) as FastMessage['data'];
      if (typeof data !== 'object' || data === null || !data.m || typeof data.m.name !== 'string') {
        throw new Error('fast protocol: message data must name its method');
      }
      out.push({ status, msgid, data });
    }
    return out;
  }
}

/** The `{name, message}` of an ERROR message. */
export function decodeFastError(msg: FastMessage): Error {
  const d = msg.data.d as { name?: unknown; message?: unknown } | undefined;
  const err = new Error(typeof d?.message === 'string' ? d.message : 'fast error');
  if (typeof d?.name === 'string') err.name = d.name;
  return err;
}
