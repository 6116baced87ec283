/**
 * Crash safety: a child process writing VMs (create/update/delete, several VMs at once)
 * is SIGKILLed at random moments, 20 rounds on the same data dir. After each kill every
 * VM file parses, and every acknowledged change is on disk: a VM's file shows its last
 * acknowledged state or the result of the one operation that had begun after it.
 *
 * The child runs the compiled module (dist/), which `npm test` builds first.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newUuid } from '../../src/common/uuid.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const DIST_INDEX = path.resolve(here, '../../dist/src/vmadm/index.js');
const CHILD = path.join(here, 'crash-child.mjs');
const ROUNDS = 20;
const WORKERS = 4;

interface Line {
  ev: 'ready' | 'begin' | 'ack';
  op?: 'create' | 'update' | 'delete';
  uuid?: string;
  n?: number;
}

/** What a VM's file may show: absent, or tags.n. */
type FileState = 'absent' | number;

let root: string;
let child: ChildProcess | undefined;

beforeAll(() => {
  if (!existsSync(DIST_INDEX)) throw new Error(`build first (npm run build): ${DIST_INDEX} is missing`);
});

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  child = undefined;
  if (root) await fsp.rm(root, { recursive: true, force: true });
});

/** Run the child until `killAfterMs` after it is ready, SIGKILL it, return its lines. */
function runAndKill(serverUuid: string, killAfterMs: number): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CHILD, DIST_INDEX, root, serverUuid, String(WORKERS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | undefined;
    const guard = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    proc.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (!timer && out.includes('"ev":"ready"')) timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
    });
    proc.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (timer) clearTimeout(timer);
      if (signal !== 'SIGKILL') {
        reject(new Error(`child exited (${code}, ${signal}) before the kill: ${err}`));
        return;
      }
      // A kill can cut the last line short; complete lines only.
      const lines = out.split('\n').slice(0, -1).map((l) => JSON.parse(l) as Line);
      resolve(lines);
    });
  });
}

async function readDir(dir: string): Promise<Map<string, FileState>> {
  const states = new Map<string, FileState>();
  for (const name of await fsp.readdir(dir)) {
    if (!name.endsWith('.json')) continue;
    const text = await fsp.readFile(path.join(dir, name), 'utf8');
    const vm = JSON.parse(text) as { uuid: string; tags: { n: number } }; // throws on a torn file
    expect(text.endsWith('}\n'), name).toBe(true);
    states.set(vm.uuid, vm.tags.n);
  }
  return states;
}

describe('crash safety', () => {
  it(`survives ${ROUNDS} SIGKILLs mid-write without torn files or lost acknowledged changes`, async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-vmadm-crash-'));
    const serverUuid = newUuid();
    const dir = path.join(root, 'servers', serverUuid, 'vms');
    let baseline = new Map<string, FileState>();
    let acked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const lines = await runAndKill(serverUuid, 20 + Math.floor(Math.random() * 250));
      expect(lines[0]?.ev).toBe('ready');
      // Possible file states per VM, replaying the child's lines in order.
      const possible = new Map<string, Set<FileState>>();
      for (const [uuid, st] of baseline) possible.set(uuid, new Set([st]));
      for (const l of lines) {
        if (l.ev === 'ready') continue;
        const result: FileState = l.op === 'delete' ? 'absent' : l.n!;
        const set = possible.get(l.uuid!) ?? new Set<FileState>(['absent']);
        if (l.ev === 'begin') set.add(result);
        else {
          set.clear();
          set.add(result);
          acked++;
        }
        possible.set(l.uuid!, set);
      }
      const onDisk = await readDir(dir);
      for (const [uuid, set] of possible) {
        const actual = onDisk.get(uuid) ?? 'absent';
        expect([...set], `round ${round}, VM ${uuid}`).toContain(actual);
      }
      for (const uuid of onDisk.keys()) expect(possible.has(uuid), `unexpected VM ${uuid}`).toBe(true);
      baseline = onDisk;
    }
    // The rounds did real work (bounded: each round lasts well under a second of writes).
    expect(acked).toBeGreaterThan(ROUNDS);
  }, 240_000);
});
