import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskLogWriter } from '../../src/agents/cn-agent/task-log.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mockcloud-tasklog-'));
  dirs.push(d);
  return d;
}

describe('TaskLogWriter', () => {
  it('creates its directory, appends, and rotates to .1 past its size, keeping every line whole', async () => {
    const file = path.join(tmp(), 'logs', 'cn-agent-tasks.log');
    const errors: Error[] = [];
    const w = new TaskLogWriter(file, (e) => errors.push(e), 1000);
    const line = (i: number) => `${JSON.stringify({ i, msg: 'x'.repeat(80) })}\n`;
    for (let i = 0; i < 30; i++) w.append(line(i));
    await w.close();
    expect(errors).toEqual([]);
    const current = fs.readFileSync(file, 'utf8');
    const rotated = fs.readFileSync(`${file}.1`, 'utf8');
    for (const text of [current, rotated]) for (const l of text.trim().split('\n')) expect(() => JSON.parse(l)).not.toThrow();
    // The newest lines are in the current file, the ones before in .1 (older generations go).
    const last = current.trim().split('\n').map((l) => JSON.parse(l).i as number);
    expect(last.at(-1)).toBe(29);
    const prev = rotated.trim().split('\n').map((l) => JSON.parse(l).i as number);
    expect(prev.at(-1)).toBe(last[0]! - 1);
    expect(fs.statSync(`${file}.1`).size).toBeGreaterThanOrEqual(1000);
  });

  it('appends to an existing file after a restart and counts its size', async () => {
    const file = path.join(tmp(), 'tasks.log');
    fs.writeFileSync(file, 'a'.repeat(900) + '\n');
    const w = new TaskLogWriter(file, () => undefined, 1000);
    w.append(`${'b'.repeat(200)}\n`);
    await w.close();
    expect(fs.existsSync(`${file}.1`)).toBe(true);
    w.append('after close\n');
    await w.close();
    expect(fs.readFileSync(file, 'utf8')).toBe('after close\n');
  });
});
