import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DaemonJsonWriter, serializeDaemonJson, type DaemonJson } from '../../src/daemon/daemon-json.js';
import { createLogger } from '../../src/common/log.js';

const base: DaemonJson = {
  pid: 42,
  startedAt: '2026-11-22T00:00:00.000Z',
  state: 'running',
  dataDir: '/var/tmp/mockcloud',
  control: { ip: '127.0.0.1', port: 4000, url: 'http://127.0.0.1:4000' },
  urls: { cnapi: 'http://127.0.0.1:1' },
  bindIp: '127.0.0.1',
  servers: {},
};

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('daemon.json', () => {
  it('parses back to what was written, one line per server', () => {
    const servers: DaemonJson['servers'] = {};
    for (let i = 0; i < 3; i++) servers[`0000000${i}-0000-4000-8000-000000000000`] = { ip: '127.0.0.1', port: 30000 + i };
    const text = serializeDaemonJson({ ...base, servers });
    expect(JSON.parse(text)).toEqual({ ...base, servers });
    expect(text.split('\n').filter((l) => l.includes('"port":300')).length).toBe(3);
    expect(JSON.parse(serializeDaemonJson(base))).toEqual(base);
  });

  it('the writer folds a burst of changes into few writes and flush() makes the file current', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mockcloud-dj-'));
    dirs.push(dir);
    const file = path.join(dir, 'daemon.json');
    let builds = 0;
    const servers: DaemonJson['servers'] = {};
    const writer = new DaemonJsonWriter(file, () => {
      builds++;
      return { ...base, servers: { ...servers } };
    }, createLogger({ name: 'test', level: 'fatal' }), 50);
    for (let i = 0; i < 200; i++) {
      servers[`uuid-${i}`] = { ip: '127.0.0.1', port: i + 1 };
      writer.markDirty();
    }
    await writer.flush();
    expect(builds).toBeLessThanOrEqual(2);
    expect(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).servers)).toHaveLength(200);
    await writer.remove();
    expect(fs.existsSync(file)).toBe(false);
  });
});
