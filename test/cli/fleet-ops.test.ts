/**
 * Deleting CNs from the CLI while another command deletes some of the same (two `ensure-servers`
 * at once, as the churn drill runs them): a CN the daemon no longer has is what a converging
 * command wanted, not a failure; `delete-servers` naming a uuid the daemon does not have still
 * fails. The daemon's answers come from a stand-in client: the race cannot be timed from outside.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DaemonClient, type ControlAnswer } from '../../src/cli/daemon-client.js';
import { deleteServers } from '../../src/cli/fleet-ops.js';
import { Progress } from '../../src/cli/progress.js';

const KEPT = '11111111-1111-4111-8111-111111111111';
const GONE = '22222222-2222-4222-8222-222222222222';

/** A daemon that removes KEPT and no longer has GONE (removed by another command meanwhile). */
class RacedDaemon extends DaemonClient {
  constructor() {
    super({ pid: process.pid, startedAt: '', state: 'running', dataDir: '/nowhere', control: { ip: '127.0.0.1', port: 1, url: 'http://127.0.0.1:1' } } as never);
  }
  override async request<T>(method: string, urlPath: string): Promise<ControlAnswer<T>> {
    expect(method).toBe('DELETE');
    if (urlPath === `/servers/${KEPT}`) return { status: 200, body: { uuid: KEPT, warnings: [], vms: [] } as T };
    return { status: 404, body: { code: 'ResourceNotFound', message: `server ${GONE} not found` } as T };
  }
}

const quiet = (): Progress => new Progress({ stream: new PassThrough() as unknown as NodeJS.WriteStream });

describe('deleting CNs another command is deleting too', () => {
  it('a converging delete counts a CN already gone as done; a named delete still reports it', async () => {
    const converging = await deleteServers(new RacedDaemon(), [KEPT, GONE], quiet(), { goneIsDone: true });
    expect(converging.deleted.map((d) => d.uuid)).toEqual([KEPT]);
    expect(converging.gone).toEqual([GONE]);
    expect(converging.errors).toEqual([]);

    const named = await deleteServers(new RacedDaemon(), [KEPT, GONE], quiet());
    expect(named.gone).toEqual([]);
    expect(named.errors).toEqual([{ uuid: GONE, message: `server ${GONE} not found` }]);
  });
});
