/**
 * The dev headnode's persistence: a lazy save that fails (a full disk) is retried until one
 * succeeds, so state changed before the disk filled is on disk once there is room again, and
 * the log has one line for the failure streak, not one per attempt.
 */
import { describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { StateDocument, type DocIo } from '../../src/headnode/store.js';

describe('StateDocument', () => {
  it('retries a failed lazy save until the disk takes it, logging the streak once', async () => {
    let failuresLeft = 3;
    const written: unknown[] = [];
    const io: DocIo = {
      read: async () => undefined,
      write: async (value) => {
        if (failuresLeft-- > 0) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        written.push(value);
      },
    };
    const log = createQuietLogger('state-doc-test');
    const errors: string[] = [];
    const infos: string[] = [];
    log.error = ((...a: unknown[]) => void errors.push(String(a.at(-1)))) as typeof log.error;
    log.info = ((...a: unknown[]) => void infos.push(String(a.at(-1)))) as typeof log.info;
    let state = 1;
    const doc = new StateDocument({ io, snapshot: () => ({ state }), log, lazyDelayMs: 10 });
    doc.saveSoon();
    state = 2;
    for (let i = 0; i < 200 && written.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(written).toEqual([{ state: 2 }]);
    expect(errors).toHaveLength(1);
    expect(infos).toEqual(['headnode state saved again']);
  });
});
