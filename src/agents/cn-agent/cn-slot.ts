/**
 * What the shared cn-agent server keeps per attached mock CN: its socket, its task history,
 * its locks, the tasks it is running and what they left running. Nothing here ticks.
 */
import type net from 'node:net';
import type { AgentAddress, MockCn } from '../../mockcn/types.js';
import { TaskHistory } from './history.js';
import { KeyedLock } from './keyed-lock.js';
import type { CnTaskState } from './types.js';
import type { UntilDetach } from './until-detach.js';

export class CnSlot {
  readonly history = new TaskHistory();
  readonly locks = new KeyedLock();
  readonly state: CnTaskState = { images: new Map() };
  /** Running tasks: their abort handle and a promise that settles when the task really ends. */
  readonly running = new Map<AbortController, Promise<void>>();
  readonly sockets = new Set<net.Socket>();
  /** What tasks left running past their end, closed on detach (see UntilDetach). */
  private readonly lingering = new Set<() => void | Promise<void>>();
  /** False once detach started: new connections and tasks are refused. */
  open = true;
  /** True while the CN is down: the listener is closed (connections are refused). */
  down = false;

  constructor(
    readonly cn: MockCn,
    readonly listener: net.Server,
    /** Changes only if the port was lost while the CN was down (see CnAgentServer.setPower). */
    public address: AgentAddress,
    readonly family: string,
  ) {}

  get serverAddress(): { address: string; family: string; port: number } {
    return { address: this.address.ip, family: this.family, port: this.address.port };
  }

  readonly untilDetach: UntilDetach = (close) => {
    if (!this.open) throw new Error('task aborted: the mock CN was removed');
    const entry = (): void | Promise<void> => close();
    this.lingering.add(entry);
    return () => {
      this.lingering.delete(entry);
    };
  };

  /** Close what tasks left running (detach); resolves once all of it has closed. */
  async closeLingering(): Promise<void> {
    const all = [...this.lingering];
    this.lingering.clear();
    await Promise.allSettled(all.map(async (close) => close()));
  }

  /** Abort every running task and wait until each has really ended. */
  async abortAll(reason: string): Promise<void> {
    const waits = [...this.running.entries()].map(([controller, done]) => {
      controller.abort(new Error(reason));
      return done;
    });
    await Promise.allSettled(waits);
  }
}
