import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests start real listeners and child processes; two cores run two files at a time.
    pool: 'forks',
    // Daemons the tests start register (src/cli/daemon-registry.ts) in a state dir of their
    // test file's own, not in the user's ~/.local/state, where a command run by hand would find
    // a test's daemon.
    setupFiles: ['test/setup/state-dir.ts'],
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
