/**
 * Each test file's own state dir ($XDG_STATE_HOME): the daemons it starts register there
 * (src/cli/daemon-registry.ts), so a command run without --data-dir sees this file's daemons
 * only, never those of a file running beside it (or of another run on the same machine), nor
 * the user's own in ~/.local/state. Removed when the file is done.
 */
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const dir = path.join(os.tmpdir(), 'mockcloud-test-state', `${process.pid}-${Date.now().toString(36)}`);
process.env.XDG_STATE_HOME = dir;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
