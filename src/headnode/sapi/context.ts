/** What the dev SAPI's routes are handed: its state and how writes reach the disk. */
import type { Logger } from '../../common/log.js';
import type { InstanceOp } from './instance-log.js';
import type { SapiState } from './model.js';

export interface SapiContext {
  state: SapiState;
  log: Logger;
  /** Applications and services: resolves once the state as of the call is on disk. */
  commit(): Promise<void>;
  /** An instance written or deleted: resolves once that is on disk. */
  record(op: InstanceOp): Promise<void>;
  /** The headnode's server uuid: a config's SERVER_UUID when its instance names none. */
  serverUuid?: string;
  /** Told of every GET /configs/:uuid answered (200, or 304 for an unchanged config). */
  onConfig?(status: number): void;
}
