import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests start real listeners and child processes; two cores run two files at a time.
    pool: 'forks',
    // Daemons the tests start record where they ran (src/cli/last-daemon.ts) here, not in the
    // user's ~/.local/state, where a command run by hand would find a test's daemon.
    env: { XDG_STATE_HOME: path.join(os.tmpdir(), 'mockcloud-test-state') },
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
